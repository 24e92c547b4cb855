"""A fake 64-core machine for the CPU-load tests: /proc/stat, this process's
cgroup files, its affinity, clocks and CPU time, as
:mod:`pmsn_mm.engine.cpu_load` reads them (tests/test_engine/
test_cpu_threads.py, tests/test_tools/test_fit_threads.py)."""
from types import SimpleNamespace

from pmsn_mm.engine import cpu_load

TICK = 100.0  # /proc/stat ticks per second in the fakes below


def stat_line(name, busy, idle):
    """A /proc/stat cpu line: user=busy, idle=idle, every other field 0."""
    return f'{name} {busy} 0 0 {idle} 0 0 0 0 0 0\n'


class FakeMachine:
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
        self.between = None  # what happens while the reader sleeps
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
        lines = [stat_line('cpu', total_busy, total_idle)]
        lines += [stat_line(f'cpu{i}', b, i_)
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


OTHERS = set(range(64)) - set(range(8, 16))  # the 56 cores of other jobs
#: /proc/self/cgroup of a job in cgroup v2 and in v1 (``cpu`` controller).
V2 = '0::/user.slice/job7\n'
V1 = '12:memory:/job7\n4:cpu,cpuacct:/job7\n0::/\n'
