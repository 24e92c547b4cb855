"""Hooks for the preemption tests (imported by their configs through
``custom_imports``; the subprocess needs the repository root on
``PYTHONPATH``)."""
import os
import signal
import time

from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS

from pmsn_mm.engine.hooks import PreemptionHook

#: Printed (to stdout, flushed) when the preemption's checkpoint starts
#: being written.
SAVING = 'TEST: saving a checkpoint'


@HOOKS.register_module()
class SlowIterHook(Hook):
    """Sleep ``seconds`` after each training iteration, so that a test can
    send a signal while the run is in a given iteration."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        time.sleep(self.seconds)


@HOOKS.register_module()
class SlowSaveHook(Hook):
    """Print :data:`SAVING` and sleep ``seconds`` while the checkpoint of a
    preemption is being written (a second signal is sent then)."""

    priority = 'LOWEST'

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def before_save_checkpoint(self, runner, checkpoint) -> None:
        if any(isinstance(hook, PreemptionHook) and hook.received
               for hook in runner.hooks):
            print(SAVING, flush=True)
            time.sleep(self.seconds)


@HOOKS.register_module()
class SignalAtIterHook(Hook):
    """Send ``SIGUSR1`` to this process after iteration ``at`` (1-based),
    before PreemptionHook looks (in-process tests)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        if runner.iter + 1 == self.at:
            os.kill(os.getpid(), signal.SIGUSR1)
