"""Threads of a CPU run: its fair share of a machine other processes use."""
from typing import Optional, Union, cast

import torch
from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS

from ..cpu_load import (USER_THREADS, CPULoadSampler, available_cores,
                        cpu_quota, describe_cores, fair_threads, quota_threads)


@HOOKS.register_module()
class CPUThreadsHook(Hook):
    """Keep a CPU run's torch threads at the cores other processes leave free
    (``torch.set_num_threads``), so that a busy machine costs a run about its
    fair share instead of 3-30x (see :mod:`pmsn_mm.engine.cpu_load`).

    ``threads='auto'`` follows :func:`~pmsn_mm.engine.cpu_load.fair_threads`
    every ``interval`` seconds (Linux; a change needs two readings in a row).
    GPU runs and ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` are left alone.

    Args:
        threads: ``'auto'``, a number of threads, or None (torch's default,
            untouched). Defaults to ``'auto'``.
        interval: Seconds between two readings of the load. Defaults to 2.
    """

    priority = 'VERY_HIGH'

    def __init__(self, threads: Union[str, int, None] = 'auto',
                 interval: float = 2.0) -> None:
        if threads not in ('auto', None) and not (
                isinstance(threads, int) and not isinstance(threads, bool)
                and threads >= 1):
            raise ValueError("CPUThreadsHook threads must be 'auto', an int "
                             f'>= 1 or None, but is {threads!r}.')
        if not isinstance(interval, (int, float)) or interval <= 0:
            raise ValueError('CPUThreadsHook interval must be a number > 0, '
                             f'but is {interval!r}.')
        self.threads = threads
        self.interval = float(interval)
        self.sampler: Optional[CPULoadSampler] = None
        self.pending: Optional[int] = None
        self.cores = available_cores()
        self.quota: Optional[float] = cpu_quota()
        self._started = False

    # ------------------------------------------------------------ decisions
    def _start(self, runner) -> None:
        """Fix or start watching the thread count (once per run)."""
        if self._started or self.threads is None:
            return
        self._started = True
        model = runner.model
        device = next((p.device for p in model.parameters()), None)
        if device is not None and device.type != 'cpu':
            return
        if USER_THREADS:
            setting = ', '.join(f'{k}={v}' for k, v in USER_THREADS.items())
            runner.logger.info(
                f'CPU threads: {torch.get_num_threads()} of {self.cores} '
                f'cores ({setting} set in the environment: kept).')
            return
        if self.threads != 'auto':
            torch.set_num_threads(cast(int, self.threads))  # checked
            runner.logger.info(
                f'CPU threads: {self.threads} of {self.cores} cores '
                '(default_hooks.cpu_threads.threads).')
            return
        cap = quota_threads(self.quota)
        if cap is not None and torch.get_num_threads() > cap:
            torch.set_num_threads(cap)  # known now, unlike the load
        cores = describe_cores(self.cores, self.quota)
        self.sampler = CPULoadSampler(self.interval)
        if not self.sampler.measurable:
            self.sampler = None
            if cap is not None and cap < self.cores:
                runner.logger.info(f'CPU threads: {torch.get_num_threads()} '
                                   f'of {cores} (the load cannot be read).')
            return
        runner.logger.info(
            f'CPU threads: {torch.get_num_threads()} of {cores}, '
            'adjusted to the cores other processes leave free (read every '
            f'{self.interval:g} s; OMP_NUM_THREADS=N or '
            'default_hooks.cpu_threads.threads=N fixes it, =None leaves '
            "torch's).")

    def _adjust(self, runner) -> None:
        if self.sampler is None:
            return
        other = self.sampler.update()
        if other is None:
            return
        target = fair_threads(self.cores, other, self.quota)
        current = torch.get_num_threads()
        if target == current:
            self.pending = None
            return
        if self.pending != target:  # the same reading twice before a change
            self.pending = target
            return
        self.pending = None
        torch.set_num_threads(target)
        why = (f'other processes keep {other:.1f} of {self.cores} cores busy'
               if target < current else
               f'other processes now use {other:.1f} of {self.cores} cores')
        if target < fair_threads(self.cores, other):  # the quota caps it
            why += (f'; a cgroup CPU quota of {self.quota:g} CPUs caps them '
                    f'at {target}')
        runner.logger.info(f'CPU threads: {current} -> {target} ({why}).')

    # ---------------------------------------------------------------- hooks
    def before_train(self, runner) -> None:
        self._start(runner)

    def before_val(self, runner) -> None:
        self._start(runner)

    def before_test(self, runner) -> None:
        self._start(runner)

    def after_train_iter(self, runner, batch_idx: int, data_batch=None,
                         outputs=None) -> None:
        self._adjust(runner)

    def after_val_iter(self, runner, batch_idx: int, data_batch=None,
                       outputs=None) -> None:
        self._adjust(runner)

    def after_test_iter(self, runner, batch_idx: int, data_batch=None,
                        outputs=None) -> None:
        self._adjust(runner)
