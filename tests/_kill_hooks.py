"""Hooks that SIGKILL their own process, for crash tests run in subprocesses.

Imported by a test config through ``custom_imports`` (the subprocess needs
the repository root on ``PYTHONPATH``).
"""
import os
import signal

from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@HOOKS.register_module()
class SIGKILLAfterIterHook(Hook):
    """SIGKILL after iteration ``at`` (1-based), after every other hook."""

    priority = 'LOWEST'

    def __init__(self, at: int) -> None:
        self.at = at

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        if runner.iter + 1 == self.at:
            _kill()


@HOOKS.register_module()
class SIGKILLDuringSaveHook(Hook):
    """SIGKILL while the checkpoint of iteration ``at`` is being written.

    The kill happens in ``os.fsync``, i.e. after the bytes went to the file
    and before it is complete on disk.
    """

    priority = 'LOWEST'

    def __init__(self, at: int) -> None:
        self.at = at

    def before_save_checkpoint(self, runner, checkpoint) -> None:
        if runner.iter + 1 == self.at:
            os.fsync = lambda fd: _kill()
