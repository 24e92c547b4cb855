"""A CPU run's fair share of a shared machine: other processes' cores from
/proc readings, the thread count that follows, and CPUThreadsHook's
decisions (two readings in a row, the user's OMP_NUM_THREADS kept)."""
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from pmsn_mm.engine import cpu_load
from pmsn_mm.engine.cpu_load import (CPUSample, fair_threads, other_cores,
                                     sample)
from pmsn_mm.engine.hooks import CPUThreadsHook


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


def test_a_short_job_fits_its_threads_once(monkeypatch):
    monkeypatch.setattr(cpu_load, 'USER_THREADS', {})
    threads = torch.get_num_threads()
    try:
        line = cpu_load.fit_threads_once(0.05)
        if sample() is not None:  # Linux
            assert line.startswith(f'CPU threads: {torch.get_num_threads()} '
                                   f'of {cpu_load.available_cores()} cores')
        monkeypatch.setattr(cpu_load, 'USER_THREADS',
                            {'OMP_NUM_THREADS': '3'})
        assert 'OMP_NUM_THREADS=3 set in the environment: kept' in \
            cpu_load.fit_threads_once(0.05)
    finally:
        torch.set_num_threads(threads)


# ------------------------------------------ owned cores and cgroup quotas
TICK = 100.0  # /proc/stat ticks per second in the fakes below


def _stat_line(name, busy, idle):
    """A /proc/stat cpu line: user=busy, idle=idle, every other field 0."""
    return f'{name} {busy} 0 0 {idle} 0 0 0 0 0 0\n'


class _Machine:
    """A fake 64-core machine: /proc/stat, /proc/self/cgroup and a cgroup
    tree under tmp_path, this process's affinity, clocks and CPU time."""

    def __init__(self, tmp_path, monkeypatch, owned=range(8, 16)):
        self.root = tmp_path
        self.busy = [1000] * 64
        self.idle = [5000] * 64
        self.wall, self.own = 50.0, 3.0
        self.stat = tmp_path / 'stat'
        self.cgroup = tmp_path / 'self_cgroup'
        self.mount = tmp_path / 'cgroup'
        self.mount.mkdir()
        self.write()
        self.between = None  # what happens while fit_threads_once sleeps
        monkeypatch.setattr(cpu_load, 'PROC_STAT', str(self.stat))
        monkeypatch.setattr(cpu_load, 'PROC_SELF_CGROUP', str(self.cgroup))
        monkeypatch.setattr(cpu_load, 'CGROUP_ROOT', str(self.mount))
        monkeypatch.setattr(cpu_load, 'owned_cpus', lambda: set(owned))
        monkeypatch.setattr(cpu_load, '_tick', lambda: TICK)
        monkeypatch.setattr(cpu_load, '_children_seconds', lambda pid: 0.0)
        monkeypatch.setattr(cpu_load, 'time', SimpleNamespace(
            monotonic=lambda: self.wall, process_time=lambda: self.own,
            sleep=self.sleep))
        monkeypatch.setattr(cpu_load, 'USER_THREADS', {})
        monkeypatch.setattr(
            'pmsn_mm.engine.hooks.cpu_threads_hook.USER_THREADS', {})

    def write(self):
        total_busy, total_idle = sum(self.busy), sum(self.idle)
        lines = [_stat_line('cpu', total_busy, total_idle)]
        lines += [_stat_line(f'cpu{i}', b, i_)
                  for i, (b, i_) in enumerate(zip(self.busy, self.idle))]
        lines.append('intr 1 2 3\nctxt 42\n')
        self.stat.write_text(''.join(lines))

    def run_for(self, seconds, busy_cpus, own=0.0):
        """``seconds`` pass; ``busy_cpus`` are busy all along, the rest
        idle; this process spends ``own`` CPU seconds."""
        for i in range(64):
            if i in busy_cpus:
                self.busy[i] += int(seconds * TICK)
            else:
                self.idle[i] += int(seconds * TICK)
        self.wall += seconds
        self.own += own
        self.write()

    def sleep(self, seconds):
        self.run_for(seconds, *self.between)

    def cgroup_file(self, relative, text):
        path = self.mount / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def machine(tmp_path, monkeypatch):
    threads = torch.get_num_threads()
    yield _Machine(tmp_path, monkeypatch)
    torch.set_num_threads(threads)


OTHERS = set(range(64)) - set(range(8, 16))  # the 56 cores of other jobs


@pytest.mark.parametrize('busy, own, threads, other', [
    (OTHERS, 0.0, 8, 0.0),  # the owned 8 idle on a busy machine
    (OTHERS | {8, 9, 10}, 0.0, 5, 3.0),  # 3 of the owned 8 taken
    (OTHERS | {8, 9}, 4.0, 8, 0.0),  # 2 cores x 2 s: this process's work
    (set(), 0.0, 8, 0.0),  # a quiet machine
])
def test_only_the_owned_cores_load_counts(machine, busy, own, threads,
                                          other):
    machine.between = (busy, own)
    line = cpu_load.fit_threads_once(2.0)
    assert torch.get_num_threads() == threads
    assert line == (f'CPU threads: {threads} of 8 cores (other processes '
                    f'keep {other:.1f} busy; OMP_NUM_THREADS=N fixes it).')


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


V2 = '0::/user.slice/job7\n'
V1 = '12:memory:/job7\n4:cpu,cpuacct:/job7\n0::/\n'


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


@pytest.mark.parametrize('cgroup, files', [
    (V2, {'user.slice/job7/cpu.max': '200000 100000\n'}),
    (V1, {'cpu,cpuacct/job7/cpu.cfs_quota_us': '200000\n',
          'cpu,cpuacct/job7/cpu.cfs_period_us': '100000\n'}),
])
def test_a_quota_of_two_cpus_gives_at_most_two_threads(
        machine, cgroup, files):
    machine.cgroup.write_text(cgroup)
    for relative, text in files.items():
        machine.cgroup_file(relative, text)
    machine.between = (OTHERS, 0.0)
    line = cpu_load.fit_threads_once(1.0)
    assert torch.get_num_threads() == 2
    assert line == ('CPU threads: 2 of 8 cores, capped at 2 by a cgroup CPU '
                    'quota of 2 CPUs (other processes keep 0.0 busy; '
                    'OMP_NUM_THREADS=N fixes it).')
    assert fair_threads(8, 7.0, 2.0) == 1  # the load still counts


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
