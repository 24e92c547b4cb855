"""A CPU run's fair share of a shared machine: other processes' cores from
/proc readings, the thread count that follows, and CPUThreadsHook's
decisions (two readings in a row, the user's OMP_NUM_THREADS kept). The
analysis tools' one-off setting: tests/test_tools/test_fit_threads.py."""
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from pmsn_mm.engine import cpu_load
from pmsn_mm.engine.cpu_load import (CPUSample, fair_threads, other_cores,
                                     sample)
from pmsn_mm.engine.hooks import CPUThreadsHook
from tests._fake_cpu import OTHERS, TICK, V1, V2, FakeMachine


@pytest.fixture(autouse=True)
def no_cgroup(tmp_path, monkeypatch):
    """No cgroup files (so no quota) unless a test writes fake ones: the
    hooks built here do not read the machine's cgroups."""
    monkeypatch.setattr(cpu_load, 'PROC_SELF_CGROUP',
                        str(tmp_path / 'no_self_cgroup'))
    monkeypatch.setattr(cpu_load, 'CGROUP_ROOT', str(tmp_path / 'no_cgroup'))


@pytest.mark.parametrize('cores, other, threads', [
    (2, 0.0, 2), (2, 0.3, 2), (2, 0.5, 1), (2, 0.67, 1), (2, 1.0, 1),
    (2, 1.9, 1), (2, 3.0, 1), (8, 2.5, 5), (8, 0.0, 8), (1, 0.9, 1)])
def test_fair_threads(cores, other, threads):
    assert fair_threads(cores, other) == threads


def test_other_cores_is_the_busy_time_this_process_did_not_spend():
    first = CPUSample(wall=10.0, busy=100.0, own=5.0)
    second = CPUSample(wall=12.0, busy=104.0, own=7.0)
    assert other_cores(first, second) == pytest.approx(1.0)
    assert other_cores(first, first) == 0.0
    assert other_cores(first, CPUSample(12.0, 101.0, 7.0)) == 0.0


@pytest.mark.skipif(sample() is None, reason='needs Linux /proc')
def test_a_busy_neighbour_is_seen():
    """A process spinning for a second shows up as about one busy core
    (at least 0.5: the machine may be shared with other work too)."""
    first = sample()
    spinner = subprocess.Popen([sys.executable, '-c',
                                'import time\nt = time.time()\n'
                                'while time.time() - t < 1.5: pass'])
    spinner.wait()
    second = sample()
    assert other_cores(first, second) >= 0.5


class _Logger:

    def __init__(self):
        self.lines = []

    def info(self, line):
        self.lines.append(line)


def _runner():
    return SimpleNamespace(model=torch.nn.Linear(2, 2), logger=_Logger())


class _Readings:
    """A sampler whose readings are given."""

    def __init__(self, values):
        self.values = list(values)
        self.measurable = True

    def update(self, force=False):
        return self.values.pop(0) if self.values else None


def test_the_hook_follows_the_load_after_two_readings(monkeypatch):
    monkeypatch.setattr(cpu_load, 'USER_THREADS', {})
    monkeypatch.setattr('pmsn_mm.engine.hooks.cpu_threads_hook.USER_THREADS',
                        {})
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        hook = CPUThreadsHook()
        hook.cores, hook.quota = 2, None
        runner = _runner()
        hook.before_train(runner)
        assert runner.logger.lines[0].startswith('CPU threads: 2 of 2 cores, '
                                                 'adjusted to the cores')
        hook.sampler = _Readings([1.0, 1.0, 1.0, 0.0, 0.0])
        hook.after_train_iter(runner, 0)
        assert torch.get_num_threads() == 2  # one reading is not enough
        hook.after_train_iter(runner, 1)
        assert torch.get_num_threads() == 1
        assert runner.logger.lines[-1] == (
            'CPU threads: 2 -> 1 (other processes keep 1.0 of 2 cores '
            'busy).')
        hook.after_train_iter(runner, 2)
        hook.after_train_iter(runner, 3)
        assert torch.get_num_threads() == 1
        hook.after_val_iter(runner, 4)
        assert torch.get_num_threads() == 2
        assert runner.logger.lines[-1] == (
            'CPU threads: 1 -> 2 (other processes now use 0.0 of 2 cores).')
    finally:
        torch.set_num_threads(threads)


def test_the_users_setting_wins(monkeypatch):
    monkeypatch.setattr('pmsn_mm.engine.hooks.cpu_threads_hook.USER_THREADS',
                        {'OMP_NUM_THREADS': '1'})
    hook = CPUThreadsHook()
    runner = _runner()
    hook.before_train(runner)
    assert hook.sampler is None
    assert 'OMP_NUM_THREADS=1 set in the environment: kept' in \
        runner.logger.lines[0]


def test_a_fixed_count_and_gpu_runs(monkeypatch):
    monkeypatch.setattr('pmsn_mm.engine.hooks.cpu_threads_hook.USER_THREADS',
                        {})
    threads = torch.get_num_threads()
    try:
        hook = CPUThreadsHook(threads=1)
        runner = _runner()
        hook.before_train(runner)
        assert torch.get_num_threads() == 1
        assert runner.logger.lines == [
            f'CPU threads: 1 of {hook.cores} cores '
            '(default_hooks.cpu_threads.threads).']
    finally:
        torch.set_num_threads(threads)
    off = CPUThreadsHook(threads=None)
    runner = _runner()
    off.before_train(runner)
    assert off.sampler is None and runner.logger.lines == []
    gpu = SimpleNamespace(model=SimpleNamespace(parameters=lambda: iter(
        [torch.empty(0, device='meta')])), logger=_Logger())
    hook = CPUThreadsHook()
    hook.before_train(gpu)
    assert hook.sampler is None and gpu.logger.lines == []


@pytest.mark.parametrize('kwargs, message', [
    (dict(threads=0), "threads must be 'auto', an int >= 1 or None"),
    (dict(threads='all'), "threads must be 'auto', an int >= 1 or None"),
    (dict(interval=0), 'interval must be a number > 0'),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CPUThreadsHook(**kwargs)


def test_the_default_runtime_has_it():
    from mmengine.config import Config

    from tests._configs import CONFIGS
    cfg = Config.fromfile(f'{CONFIGS}/_base_/default_runtime.py')
    assert cfg.default_hooks.cpu_threads == dict(type='CPUThreadsHook')


# ------------------------------------------ owned cores and cgroup quotas
@pytest.fixture
def machine(tmp_path, monkeypatch):
    threads = torch.get_num_threads()
    yield FakeMachine(tmp_path, monkeypatch)
    torch.set_num_threads(threads)


def test_the_owned_cores_busy_seconds(machine):
    """sample().busy is the user..steal ticks of cpu8..cpu15 alone."""
    machine.busy[8], machine.busy[20] = 1500, 9999
    machine.write()
    assert cpu_load.sample().busy == pytest.approx(
        (7 * 1000 + 1500) / TICK)
    machine.stat.write_text('cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n')
    assert cpu_load.sample() is None  # none of the owned cores listed
    machine.stat.unlink()
    assert cpu_load.sample() is None


@pytest.mark.parametrize('cgroup, files, quota', [
    (V2, {'user.slice/job7/cpu.max': '200000 100000\n'}, 2.0),
    (V2, {'user.slice/job7/cpu.max': '150000 100000\n'}, 1.5),
    (V2, {'user.slice/job7/cpu.max': 'max 100000\n'}, None),
    (V2, {'user.slice/job7/cpu.max': 'max 100000\n',
          'user.slice/cpu.max': '50000 100000\n'}, 0.5),  # a parent's
    (V2, {'cpu.max': '300000 100000\n'}, 3.0),  # a container's own root
    (V2, {'user.slice/job7/cpu.weight': '100\n'}, None),  # no cpu.max
    (V1, {'cpu,cpuacct/job7/cpu.cfs_quota_us': '200000\n',
          'cpu,cpuacct/job7/cpu.cfs_period_us': '100000\n'}, 2.0),
    (V1, {'cpu,cpuacct/job7/cpu.cfs_quota_us': '-1\n',
          'cpu,cpuacct/job7/cpu.cfs_period_us': '100000\n'}, None),
    ('3:cpu:/\n', {'cpu/cpu.cfs_quota_us': '400000\n',
                   'cpu/cpu.cfs_period_us': '200000\n'}, 2.0),
    (V1, {'cpu,cpuacct/job7/cpu.cfs_quota_us': '200000\n'}, None),
    (None, {'user.slice/job7/cpu.max': '200000 100000\n'}, None),
    ('', {}, None),
])
def test_the_cgroup_quota(machine, cgroup, files, quota):
    if cgroup is not None:
        machine.cgroup.write_text(cgroup)
    for relative, text in files.items():
        machine.cgroup_file(relative, text)
    assert cpu_load.cpu_quota() == quota


@pytest.mark.parametrize('quota, threads', [
    (None, None), (2.0, 2), (1.5, 1), (0.5, 1), (2.999, 2), (16.0, 16)])
def test_quota_threads_round_down(quota, threads):
    assert cpu_load.quota_threads(quota) == threads


def test_the_hook_caps_at_the_quota_at_once_and_says_so(machine):
    machine.cgroup.write_text(V2)
    machine.cgroup_file('user.slice/job7/cpu.max', '200000 100000\n')
    torch.set_num_threads(8)
    hook = CPUThreadsHook()
    assert (hook.cores, hook.quota) == (8, 2.0)
    runner = _runner()
    hook.before_train(runner)
    assert torch.get_num_threads() == 2
    assert runner.logger.lines[0].startswith(
        'CPU threads: 2 of 8 cores, capped at 2 by a cgroup CPU quota of 2 '
        'CPUs, adjusted to the cores other processes leave free')
    hook.sampler = _Readings([0.0, 0.0, 7.0, 7.0, 0.2, 0.2])
    hook.after_train_iter(runner, 0)
    hook.after_train_iter(runner, 1)
    assert torch.get_num_threads() == 2 and len(runner.logger.lines) == 1
    hook.after_train_iter(runner, 2)
    hook.after_train_iter(runner, 3)
    assert torch.get_num_threads() == 1
    assert runner.logger.lines[-1] == (
        'CPU threads: 2 -> 1 (other processes keep 7.0 of 8 cores busy).')
    hook.after_train_iter(runner, 4)
    hook.after_train_iter(runner, 5)
    assert torch.get_num_threads() == 2
    assert runner.logger.lines[-1] == (
        'CPU threads: 1 -> 2 (other processes now use 0.2 of 8 cores; a '
        'cgroup CPU quota of 2 CPUs caps them at 2).')


def test_the_hook_without_a_quota_keeps_the_owned_cores(machine):
    """Missing cgroup files: no cap; 8 owned idle cores on a busy machine
    keep 8 threads through the hook's two readings."""
    torch.set_num_threads(8)
    hook = CPUThreadsHook(interval=1.0)
    assert hook.quota is None
    runner = _runner()
    hook.before_train(runner)
    assert runner.logger.lines[0].startswith('CPU threads: 8 of 8 cores, '
                                             'adjusted')
    for i in range(4):
        machine.run_for(1.5, OTHERS)
        hook.after_train_iter(runner, i)
    assert torch.get_num_threads() == 8 and len(runner.logger.lines) == 1
    for i in range(2):  # and 3 owned cores taken: 5
        machine.run_for(1.5, OTHERS | {12, 13, 14})
        hook.after_train_iter(runner, 4 + i)
    assert torch.get_num_threads() == 5
    assert runner.logger.lines[-1] == (
        'CPU threads: 8 -> 5 (other processes keep 3.0 of 8 cores busy).')
