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
        hook.cores = 2
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
