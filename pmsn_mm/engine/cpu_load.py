"""How many CPU cores other processes keep busy, and how many threads a
CPU run should use so that it takes about its fair share of the machine.

torch's OpenMP threads wait for each other by spinning: on a machine where
another process holds a core, a run with one thread per core waits for a
thread the kernel has descheduled, every parallel region (measured here on
2 cores: the CPU toy job 3.3x slower beside one busy single-threaded
process, 25-30x beside a multi-threaded one). With as many threads as there
are free cores it runs at about the speed of its fair share instead.

:class:`CPULoadSampler` reads Linux's ``/proc/stat`` (the busy time of all
cores) and this process's CPU time (all its threads, and its live child
processes such as dataloader workers), and tells from two samples how many
cores *other* processes used in between. :func:`fair_threads` turns that
into a thread count. Elsewhere than Linux nothing is measured (``sample``
returns None) and the thread count is left as it is.
"""
import os
import time
from typing import NamedTuple, Optional

#: The environment variables that fix the thread count (a user's choice).
THREAD_VARIABLES = ('OMP_NUM_THREADS', 'MKL_NUM_THREADS')
#: What the process's environment set when pmsn_mm was first imported
#: (before mmengine's distributed setup writes OMP_NUM_THREADS=1 into it).
USER_THREADS = {k: os.environ[k] for k in THREAD_VARIABLES
                if k in os.environ}


class CPUSample(NamedTuple):
    """One reading: wall time, busy core-seconds of the whole machine and
    CPU seconds of this process (and its children)."""
    wall: float
    busy: float
    own: float


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _tick() -> float:
    try:
        return float(os.sysconf('SC_CLK_TCK'))
    except (ValueError, OSError, AttributeError):
        return 100.0


def _machine_busy_seconds() -> Optional[float]:
    """Busy core-seconds since boot from ``/proc/stat`` (every field of the
    ``cpu`` line but idle and iowait), or None where it cannot be read."""
    try:
        with open('/proc/stat') as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != 'cpu':
        return None
    values = [float(v) for v in fields[1:9]]  # user .. steal
    idle = values[3] + values[4]  # idle, iowait
    return (sum(values) - idle) / _tick()


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
    """A reading now, or None where the machine's CPU time is unknown."""
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
        Busy core-seconds of the machine not spent by this process (or its
        children), per second of wall time; 0 for an empty interval.
    """
    wall = second.wall - first.wall
    if wall <= 0:
        return 0.0
    other = (second.busy - first.busy) - (second.own - first.own)
    return max(0.0, other / wall)


def fair_threads(cores: int, other: float) -> int:
    """Threads for the cores that other processes leave free.

    A core counts as taken once other processes use 0.4 of it: one busy
    neighbour beside a run with a thread per core gets only part of a core
    (the run's threads take the rest), so its reading is below 1.

    Args:
        cores: Cores available to this process.
        other: Cores other processes keep busy (:func:`other_cores`).

    Returns:
        ``cores - taken``, at least 1.
    """
    taken = int(other + 0.6)
    return max(1, min(cores, cores - taken))


class CPULoadSampler:
    """Readings of the machine's load over time.

    Call :meth:`update` now and then: after at least ``interval`` seconds
    since the previous reading it returns how many cores other processes
    used in between.

    Args:
        interval: Seconds between two readings. Defaults to 2.
    """

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self.last = sample()

    @property
    def measurable(self) -> bool:
        """Whether this machine's load can be read (Linux)."""
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


def fit_threads_once(seconds: float = 0.5) -> Optional[str]:
    """For a short CPU job (an analysis tool): read the machine's load over
    ``seconds`` and set torch's threads to the cores other processes leave
    free, once. A process started with ``OMP_NUM_THREADS`` /
    ``MKL_NUM_THREADS`` keeps its threads.

    Args:
        seconds: How long to watch the load. Defaults to 0.5.

    Returns:
        One line saying what was chosen and why, or None where nothing
        could be read.
    """
    import torch
    if USER_THREADS:
        setting = ', '.join(f'{k}={v}' for k, v in USER_THREADS.items())
        return (f'CPU threads: {torch.get_num_threads()} ({setting} set in '
                'the environment: kept).')
    first = sample()
    if first is None:
        return None
    time.sleep(seconds)
    second = sample()
    if second is None:  # /proc/stat became unreadable meanwhile
        return None
    other = other_cores(first, second)
    cores = available_cores()
    threads = fair_threads(cores, other)
    torch.set_num_threads(threads)
    return (f'CPU threads: {threads} of {cores} cores (other processes keep '
            f'{other:.1f} busy; OMP_NUM_THREADS=N fixes it).')
