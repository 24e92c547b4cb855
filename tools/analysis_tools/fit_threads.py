"""The CPU threads of a short analysis job, set once for the cores other
processes leave free (``nearest_neighbors.py``, ``prototype_gallery.py``;
a training run adapts them throughout with ``CPUThreadsHook``)."""
import time
from typing import Optional

import torch

from pmsn_mm.engine import cpu_load


def fit_threads_once(seconds: float = 0.5) -> Optional[str]:
    """For a short CPU job: set torch's threads once to the cores other
    processes leave free over ``seconds`` (unless ``OMP_NUM_THREADS`` /
    ``MKL_NUM_THREADS`` are set).

    Args:
        seconds: How long to watch the load. Defaults to 0.5.

    Returns:
        One line saying what was chosen and why, or None where nothing
        could be read.
    """
    if cpu_load.USER_THREADS:
        setting = ', '.join(
            f'{k}={v}' for k, v in cpu_load.USER_THREADS.items())
        return (f'CPU threads: {torch.get_num_threads()} ({setting} set in '
                'the environment: kept).')
    first = cpu_load.sample()
    if first is None:
        return None
    time.sleep(seconds)
    second = cpu_load.sample()
    if second is None:  # /proc/stat became unreadable meanwhile
        return None
    other = cpu_load.other_cores(first, second)
    cores, quota = cpu_load.available_cores(), cpu_load.cpu_quota()
    threads = cpu_load.fair_threads(cores, other, quota)
    torch.set_num_threads(threads)
    return (f'CPU threads: {threads} of '
            f'{cpu_load.describe_cores(cores, quota)} (other processes keep '
            f'{other:.1f} busy; OMP_NUM_THREADS=N fixes it).')
