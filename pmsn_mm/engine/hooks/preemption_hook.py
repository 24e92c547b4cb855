"""Preemption: finish the iteration, save one checkpoint, requeue, exit
(docs/distributed.md, "Preemption and requeue")."""
import logging
import os
import os.path as osp
import signal
import subprocess
import sys
import threading
from types import FrameType
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import torch
import torch.distributed as torch_dist
from mmengine.dist import get_dist_info, is_main_process
from mmengine.hooks import CheckpointHook, Hook
from mmpretrain.registry import HOOKS

from ..resume import (record_last_checkpoint, remove_preemption_marker,
                      write_preemption_marker)
from .rng_state_hook import RNGStateHook, _checkpoint_due
from .work_dir_overwrite_hook import WorkDirOverwriteHook

#: Exit status after a checkpoint saved on a signal (``EX_TEMPFAIL``).
EXIT_PREEMPTED = 75
#: Set by ``tools/dist_train.sh``: the ranks write their exit status there
#: and exit 0 (torchrun reports any other status as a failure).
STATUS_FILE_ENV = 'PMSN_PREEMPTED_STATUS_FILE'
#: Signals a handler cannot be installed for.
_UNCATCHABLE = ('SIGKILL', 'SIGSTOP')


def slurm_job_id() -> Optional[str]:
    """The id ``scontrol requeue`` takes (``<array job>_<task>`` for an
    array task), or None outside a Slurm job."""
    array, task = (os.environ.get('SLURM_ARRAY_JOB_ID'),
                   os.environ.get('SLURM_ARRAY_TASK_ID'))
    if array and task:
        return f'{array}_{task}'
    return os.environ.get('SLURM_JOB_ID') or None


@HOOKS.register_module()
class PreemptionHook(Hook):
    """Stop a run on SIGTERM/SIGUSR1 after at most the current iteration,
    with a checkpoint (and ``preempted.json``) the same command resumes
    from; then requeue under Slurm and exit with :data:`EXIT_PREEMPTED`.

    The handlers only set a flag; several ranks combine flags with an async
    all-reduce on a gloo group every ``interval`` iterations (no GPU sync),
    so all stop after the same iteration, at most ``2 * interval`` after
    the signal. The checkpoint goes through the ``CheckpointHook``'s
    ``out_dir``/``backend_args`` with every rank's random states.

    Args:
        signals: Names of the signals handled. Defaults to
            ``('SIGTERM', 'SIGUSR1')`` (what Slurm sends before it kills a
            job). ``[]`` turns the hook off.
        interval: With several ranks, iterations between two agreements.
            Defaults to 2.
        requeue: ``'auto'``: rank 0 runs ``scontrol requeue`` inside a
            Slurm job after SIGUSR1 only (SIGTERM is also ``scancel``'s);
            ``True``: after any handled signal; ``False``: never. Defaults
            to ``'auto'``.
        exit_code: The status the processes exit with after the save.
            Defaults to :data:`EXIT_PREEMPTED`.
    """

    # after_train_iter: after the iteration's other hooks, CheckpointHook
    # (VERY_LOW = 90) included, and before WorkDirOverwriteHook (LOWEST)
    priority = 95

    def __init__(self,
                 signals: Sequence[str] = ('SIGTERM', 'SIGUSR1'),
                 interval: int = 2,
                 requeue: Union[str, bool] = 'auto',
                 exit_code: int = EXIT_PREEMPTED) -> None:
        if isinstance(signals, str) or any(
                not isinstance(name, str) or name in _UNCATCHABLE
                or not isinstance(getattr(signal, name, None), signal.Signals)
                for name in signals):
            raise ValueError(
                'PreemptionHook signals must be a list of signal names such '
                "as 'SIGTERM', 'SIGUSR1', 'SIGUSR2', 'SIGINT' (not SIGKILL "
                f'or SIGSTOP; [] turns the hook off), but is {signals!r}.')
        if not isinstance(interval, int) or isinstance(interval, bool) \
                or interval < 1:
            raise ValueError('PreemptionHook interval must be an int >= 1, '
                             f'but is {interval!r}.')
        if not (isinstance(requeue, bool) or requeue == 'auto'):
            raise ValueError("PreemptionHook requeue must be 'auto', True or "
                             f'False, but is {requeue!r}.')
        if not isinstance(exit_code, int) or isinstance(exit_code, bool) \
                or not 0 <= exit_code <= 255:
            raise ValueError('PreemptionHook exit_code must be an int in '
                             f'0..255, but is {exit_code!r}.')
        self.signals = tuple(signal.Signals[name] for name in signals)
        self.interval = interval
        self.requeue = requeue
        self.exit_code = exit_code
        self.received: Optional[signal.Signals] = None
        self.ignored = 0  # signals after the first
        self._saving = False
        self._previous: Dict[signal.Signals, Any] = {}
        self._group: Any = None
        self._pending: Optional[Tuple[Any, torch.Tensor]] = None

    # ------------------------------------------------------------ signals
    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        # only set flags: the main thread may hold any lock (logging...)
        if self.received is None and not self._saving:
            self.received = signal.Signals(signum)
        else:
            self.ignored += 1

    def before_train(self, runner) -> None:
        """Install the handlers; with several ranks, a gloo group for the
        agreement (every rank calls this)."""
        if not self.signals:
            return
        if threading.current_thread() is not threading.main_thread():
            runner.logger.warning(
                'PreemptionHook: training runs outside the main thread, '
                'where signal handlers cannot be installed; '
                f'{", ".join(s.name for s in self.signals)} keep their '
                'default action.')
        else:
            for sig in self.signals:
                self._previous[sig] = signal.signal(sig, self._handle)
        if get_dist_info()[1] > 1:
            # CPU flags on their own group: no GPU work, no interleaving
            # with the model's collectives
            self._group = torch_dist.new_group(backend='gloo')

    def after_train(self, runner) -> None:
        """Put the previous handlers back; the run finished, so a
        ``preempted.json`` of an earlier preemption goes."""
        self._wait_pending()
        self._restore_handlers()
        if is_main_process() and remove_preemption_marker(runner.work_dir):
            runner.logger.info(
                'PreemptionHook: the run finished; removed preempted.json '
                'from the work dir.')

    def _restore_handlers(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    # ---------------------------------------------------------- agreement
    def _wait_pending(self) -> Optional[signal.Signals]:
        if self._pending is None:
            return None
        work, flag = self._pending
        self._pending = None
        work.wait()
        value = int(flag.numpy()[0])  # a CPU tensor: no device sync
        return signal.Signals(value) if value else None

    def _agreed(self, runner) -> Optional[signal.Signals]:
        """The signal every rank stops on after this iteration, or None."""
        if self._group is None:
            return self.received
        if (runner.iter + 1) % self.interval:
            return None
        agreed = self._wait_pending()
        if agreed is not None:
            return agreed
        flag = torch.tensor([int(self.received or 0)], dtype=torch.int64)
        work = torch_dist.all_reduce(
            flag, op=torch_dist.ReduceOp.MAX, group=self._group,
            async_op=True)
        self._pending = (work, flag)
        return None

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        """Stop here if the ranks agree that a signal came."""
        agreed = self._agreed(runner)
        if agreed is None or runner.iter + 1 >= runner.max_iters:
            return  # the last iteration: the run ends as usual
        self._saving = True
        self._preempt(runner, agreed)

    # --------------------------------------------------------- preemption
    @staticmethod
    def _checkpoint_hook(runner) -> Optional[CheckpointHook]:
        return next((hook for hook in runner.hooks
                     if isinstance(hook, CheckpointHook)), None)

    def _save(self, runner) -> str:
        """Write ``iter_N.pth`` (every rank calls it; rank 0 writes)."""
        step = runner.iter + 1
        hook = self._checkpoint_hook(runner)
        if hook is not None and not hook.by_epoch and \
                hook.filename_tmpl.format(step) == f'iter_{step}.pth':
            # CheckpointHook's own save: max_keep_ckpts counts it
            hook._save_checkpoint_with_step(
                runner, step, dict(epoch=runner.epoch, iter=step))
            return hook.last_ckpt
        out_dir = getattr(hook, 'out_dir', None) or runner.work_dir
        backend_args = getattr(hook, 'backend_args', None)
        filename = f'iter_{step}.pth'
        runner.save_checkpoint(out_dir, filename, by_epoch=False,
                               backend_args=backend_args)
        path = osp.join(out_dir, filename)
        runner.message_hub.update_info('last_ckpt', path)
        if is_main_process():
            record_last_checkpoint(runner.work_dir, path)
        return path

    def _should_requeue(self, received: signal.Signals) -> bool:
        if self.requeue is False or slurm_job_id() is None:
            return False
        return self.requeue is True or received == signal.SIGUSR1

    def _requeue(self, runner) -> None:
        job = slurm_job_id()
        try:
            out = subprocess.run(['scontrol', 'requeue', str(job)],
                                 capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            runner.logger.warning(
                f'PreemptionHook: scontrol requeue {job} failed ({error}); '
                'submit the same command again to continue.')
            return
        if out.returncode:
            runner.logger.warning(
                f'PreemptionHook: scontrol requeue {job} failed (status '
                f'{out.returncode}: {(out.stderr or out.stdout).strip()}); '
                'submit the same command again to continue (sbatch '
                '--requeue allows a job to be requeued).')
        else:
            runner.logger.info(f'PreemptionHook: requeued Slurm job {job} '
                               '(scontrol requeue).')

    def _preempt(self, runner, received: signal.Signals) -> None:
        step = runner.iter + 1
        rng = next((hook for hook in runner.hooks
                    if isinstance(hook, RNGStateHook)), None)
        hook = self._checkpoint_hook(runner)
        if _checkpoint_due(runner) and hook is not None:
            path = osp.join(hook.out_dir, hook.filename_tmpl.format(step))
        else:
            if rng is not None:
                rng.capture(runner)
            path = self._save(runner)
        requeue = self._should_requeue(received)
        if is_main_process():
            write_preemption_marker(runner.work_dir, path, step,
                                    received.name,
                                    os.environ.get('SLURM_JOB_ID'))
            for other in runner.hooks:
                if isinstance(other, WorkDirOverwriteHook):
                    other.discard_if_saved(runner)
            runner.logger.info(
                f'PreemptionHook: {received.name} received; every rank '
                f'stopped after iteration {step}, saved {path} and '
                'preempted.json; the same command resumes from it. Exiting '
                f'with status {self.exit_code}'
                + (f' ({self.ignored} further signal(s) ignored).'
                   if self.ignored else '.'))
            if requeue:
                self._requeue(runner)
        if self._group is not None:
            torch_dist.barrier(group=self._group)  # rank 0 is done
        self._exit(runner)

    def _exit(self, runner) -> None:
        """End the process now, with :attr:`exit_code` (a distributed
        process must not reach interpreter finalization: see
        :func:`pmsn_mm.engine.launcher.exit_after_distributed_run`)."""
        status = self.exit_code
        status_file = os.environ.get(STATUS_FILE_ENV)
        if status_file:
            with open(status_file, 'w') as f:
                f.write(f'{status}\n')
            status = 0
        runner.visualizer.close()
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)
