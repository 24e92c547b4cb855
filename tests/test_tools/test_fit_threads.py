"""tools/analysis_tools/fit_threads.py: a short CPU job's threads, set once
for the cores other processes leave free (on the fake machine of
tests/_fake_cpu.py: only the owned cores' load counts, a cgroup quota caps
the count), the user's OMP_NUM_THREADS kept."""
import pytest
import torch

from pmsn_mm.engine import cpu_load
from pmsn_mm.engine.cpu_load import fair_threads, sample
from tests._fake_cpu import OTHERS, V1, V2, FakeMachine
from tests._tools import import_beside_tools

fit_threads = import_beside_tools('tools/analysis_tools/fit_threads.py')


@pytest.fixture(autouse=True)
def no_cgroup(tmp_path, monkeypatch):
    """No cgroup files (so no quota) unless a test writes fake ones."""
    monkeypatch.setattr(cpu_load, 'PROC_SELF_CGROUP',
                        str(tmp_path / 'no_self_cgroup'))
    monkeypatch.setattr(cpu_load, 'CGROUP_ROOT', str(tmp_path / 'no_cgroup'))


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """The fake machine, whose clock also drives the helper's sleep."""
    threads = torch.get_num_threads()
    fake = FakeMachine(tmp_path, monkeypatch)
    monkeypatch.setattr(fit_threads, 'time', cpu_load.time)
    yield fake
    torch.set_num_threads(threads)


def test_a_short_job_fits_its_threads_once(monkeypatch):
    monkeypatch.setattr(cpu_load, 'USER_THREADS', {})
    threads = torch.get_num_threads()
    try:
        line = fit_threads.fit_threads_once(0.05)
        if sample() is not None:  # Linux
            assert line.startswith(f'CPU threads: {torch.get_num_threads()} '
                                   f'of {cpu_load.available_cores()} cores')
        monkeypatch.setattr(cpu_load, 'USER_THREADS',
                            {'OMP_NUM_THREADS': '3'})
        assert 'OMP_NUM_THREADS=3 set in the environment: kept' in \
            fit_threads.fit_threads_once(0.05)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize('busy, own, threads, other', [
    (OTHERS, 0.0, 8, 0.0),  # the owned 8 idle on a busy machine
    (OTHERS | {8, 9, 10}, 0.0, 5, 3.0),  # 3 of the owned 8 taken
    (OTHERS | {8, 9}, 4.0, 8, 0.0),  # 2 cores x 2 s: this process's work
    (set(), 0.0, 8, 0.0),  # a quiet machine
])
def test_only_the_owned_cores_load_counts(machine, busy, own, threads,
                                          other):
    machine.between = (busy, own)
    line = fit_threads.fit_threads_once(2.0)
    assert torch.get_num_threads() == threads
    assert line == (f'CPU threads: {threads} of 8 cores (other processes '
                    f'keep {other:.1f} busy; OMP_NUM_THREADS=N fixes it).')


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
    line = fit_threads.fit_threads_once(1.0)
    assert torch.get_num_threads() == 2
    assert line == ('CPU threads: 2 of 8 cores, capped at 2 by a cgroup CPU '
                    'quota of 2 CPUs (other processes keep 0.0 busy; '
                    'OMP_NUM_THREADS=N fixes it).')
    assert fair_threads(8, 7.0, 2.0) == 1  # the load still counts
