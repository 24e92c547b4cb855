"""How many CPU cores other processes keep busy, and how many threads a
CPU run should use so that it takes about its fair share of the machine.

torch's OpenMP threads spin waiting for each other, so a run with one
thread per core beside a busy process waits, every parallel region, for a
thread the kernel descheduled (measured on 2 cores: 3.3x slower beside one
busy single-threaded process, 25-30x beside a multi-threaded one).

:class:`CPULoadSampler` reads ``/proc/stat`` (the cores of this process's
CPU affinity) and this process's CPU time (children included), and tells
from two samples how many cores *other* processes used; :func:`fair_threads`
turns that into a thread count, capped by a cgroup CPU quota
(:func:`cpu_quota`, :func:`quota_threads`). Elsewhere than Linux nothing is
measured and the thread count is left as it is.
"""
import math
import os
import os.path as osp
import time
from typing import List, NamedTuple, Optional, Set

#: The environment variables that fix the thread count (a user's choice).
THREAD_VARIABLES = ('OMP_NUM_THREADS', 'MKL_NUM_THREADS')
#: What the process's environment set when pmsn_mm was first imported
#: (before mmengine's distributed setup writes OMP_NUM_THREADS=1 into it).
USER_THREADS = {k: os.environ[k] for k in THREAD_VARIABLES
                if k in os.environ}

#: Per-core busy times (the ``cpuN`` lines).
PROC_STAT = '/proc/stat'
#: This process's cgroups (``ID:CONTROLLERS:PATH`` lines).
PROC_SELF_CGROUP = '/proc/self/cgroup'
#: Where the cgroup file systems are mounted (v1: a folder per controller).
CGROUP_ROOT = '/sys/fs/cgroup'


class CPUSample(NamedTuple):
    """One reading: wall time, busy core-seconds of this process's cores
    and CPU seconds of this process (and its children)."""
    wall: float
    busy: float
    own: float


def owned_cpus() -> Optional[Set[int]]:
    """The CPUs this process may run on (its affinity), or None where the
    affinity is unknown (not Linux)."""
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return None


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the count)."""
    cpus = owned_cpus()
    return len(cpus) if cpus else os.cpu_count() or 1


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _ratio(quota: str, period: str) -> Optional[float]:
    """CPUs of a quota and period in microseconds; None for no quota."""
    try:
        q, p = float(quota), float(period)
    except ValueError:  # 'max' (v2's no quota)
        return None
    return q / p if q > 0 and p > 0 else None  # v1's -1: no quota


def _dir_quota(folder: str) -> Optional[float]:
    """The quota one cgroup folder sets, in CPUs, or None."""
    text = _read(osp.join(folder, 'cpu.max'))  # v2: 'QUOTA PERIOD'
    if text is not None:
        fields = text.split()
        return _ratio(*fields[:2]) if len(fields) >= 2 else None
    quota = _read(osp.join(folder, 'cpu.cfs_quota_us'))  # v1
    period = _read(osp.join(folder, 'cpu.cfs_period_us'))
    if quota is None or period is None:
        return None
    return _ratio(quota.strip(), period.strip())


def _cgroup_folders() -> List[str]:
    """The folders of this process's CPU cgroup and its ancestors, its own
    first (v1 with a ``cpu`` controller, else v2); missing folders skipped
    (in a container the mount's root may be the process's cgroup)."""
    text = _read(PROC_SELF_CGROUP)
    if text is None:
        return []
    mounts, path = [], None
    for line in text.splitlines():
        parts = line.strip().split(':', 2)
        if len(parts) != 3:
            continue
        controllers = parts[1].split(',')
        if 'cpu' in controllers:  # v1
            mounts = [osp.join(CGROUP_ROOT, parts[1]),
                      osp.join(CGROUP_ROOT, 'cpu')]
            path = parts[2]
            break
        if parts[0] == '0' and parts[1] == '':  # v2
            mounts, path = [CGROUP_ROOT], parts[2]
    mount = next((m for m in mounts if osp.isdir(m)), None)
    if mount is None or path is None:
        return []
    folders, rel = [], path.strip('/')
    while True:
        folder = osp.join(mount, rel) if rel else mount
        if osp.isdir(folder):
            folders.append(folder)
        if not rel:
            return folders
        rel = osp.dirname(rel)


def cpu_quota() -> Optional[float]:
    """The CPUs a cgroup CPU quota allows this process (Docker's
    ``--cpus``; the smallest of its cgroup and ancestors), or None."""
    quotas = [q for q in map(_dir_quota, _cgroup_folders()) if q is not None]
    return min(quotas) if quotas else None


def quota_threads(quota: Optional[float]) -> Optional[int]:
    """Threads a CPU quota allows: the quota rounded down (a thread beyond
    it is throttled and the others spin), at least 1; None for no quota.

    Args:
        quota: CPUs of the quota (:func:`cpu_quota`), or None.
    """
    if quota is None:
        return None
    return max(1, math.floor(quota + 1e-9))


def describe_cores(cores: int, quota: Optional[float]) -> str:
    """``'8 cores'``, or with a quota that caps them ``'8 cores, capped at 2
    by a cgroup CPU quota of 2.5 CPUs'``.

    Args:
        cores: Cores this process may run on.
        quota: CPUs of its cgroup quota (:func:`cpu_quota`), or None.
    """
    cap = quota_threads(quota)
    if cap is None or cap >= cores:
        return f'{cores} cores'
    return (f'{cores} cores, capped at {cap} by a cgroup CPU quota of '
            f'{quota:g} CPUs')


def _tick() -> float:
    try:
        return float(os.sysconf('SC_CLK_TCK'))
    except (ValueError, OSError, AttributeError):
        return 100.0


def _busy(fields: List[str]) -> float:
    """Busy ticks of a ``/proc/stat`` cpu line's values (all of user ..
    steal but idle and iowait)."""
    values = [float(v) for v in fields[:8]]  # user .. steal
    return sum(values) - values[3] - values[4]


def _machine_busy_seconds() -> Optional[float]:
    """Busy core-seconds since boot of the cores this process owns (the
    machine's where the affinity is unknown), or None."""
    text = _read(PROC_STAT)
    if text is None:
        return None
    cpus = owned_cpus()
    total, found = 0.0, False
    for line in text.splitlines():
        fields = line.split()
        if not fields or not fields[0].startswith('cpu'):
            continue
        name = fields[0][3:]
        if cpus is None:
            if name == '':
                return _busy(fields[1:]) / _tick()
        elif name.isdigit() and int(name) in cpus:
            total += _busy(fields[1:])
            found = True
    return total / _tick() if found else None


def _children_seconds(pid: int) -> float:
    """CPU seconds of the live child processes of ``pid`` (dataloader
    workers; their own children are not followed)."""
    total, tick = 0.0, _tick()
    try:
        names = os.listdir('/proc')
    except OSError:
        return 0.0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat') as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        # fields after the command name (which may contain spaces)
        rest = stat.rsplit(')', 1)[-1].split()
        if len(rest) > 12 and int(rest[1]) == pid:
            total += (float(rest[11]) + float(rest[12])) / tick
    return total


def sample() -> Optional[CPUSample]:
    """A reading now, or None where the cores' CPU time is unknown."""
    busy = _machine_busy_seconds()
    if busy is None:
        return None
    own = time.process_time() + _children_seconds(os.getpid())
    return CPUSample(time.monotonic(), busy, own)


def other_cores(first: CPUSample, second: CPUSample) -> float:
    """Cores that other processes kept busy between two readings.

    Args:
        first: The earlier reading.
        second: The later one.

    Returns:
        Busy core-seconds not spent by this process (or its children), per
        second of wall time; 0 for an empty interval.
    """
    wall = second.wall - first.wall
    if wall <= 0:
        return 0.0
    other = (second.busy - first.busy) - (second.own - first.own)
    return max(0.0, other / wall)


def fair_threads(cores: int, other: float,
                 quota: Optional[float] = None) -> int:
    """Threads for the cores that other processes leave free.

    A core counts as taken once other processes use 0.4 of it (a busy
    neighbour beside a run with a thread per core reads below 1).

    Args:
        cores: Cores available to this process.
        other: Of these, the cores others keep busy (:func:`other_cores`).
        quota: CPUs of a cgroup quota (:func:`cpu_quota`), which caps the
            count (:func:`quota_threads`); None for no quota.

    Returns:
        ``cores - taken``, at most the quota's threads, at least 1.
    """
    taken = int(other + 0.6)
    free = max(1, min(cores, cores - taken))
    cap = quota_threads(quota)
    return free if cap is None else min(free, cap)


class CPULoadSampler:
    """Readings of the load of this process's cores over time.

    :meth:`update`, after ``interval`` seconds, returns how many cores
    other processes used since the previous reading.

    Args:
        interval: Seconds between two readings. Defaults to 2.
    """

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self.last = sample()

    @property
    def measurable(self) -> bool:
        """Whether the cores' load can be read (Linux)."""
        return self.last is not None

    def update(self, force: bool = False) -> Optional[float]:
        """Cores other processes used since the previous reading, or None
        before ``interval`` has passed (or where nothing can be read).

        Args:
            force: Read now whatever the interval.
        """
        if self.last is None:
            return None
        if not force and time.monotonic() - self.last.wall < self.interval:
            return None
        now = sample()
        if now is None:
            return None
        other = other_cores(self.last, now)
        self.last = now
        return other
