"""Hooks that SIGKILL their own process (crash tests run in subprocesses)
or raise (in-process crash tests).

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
    """SIGKILL after iteration ``at`` (1-based), after every other hook;
    only on rank ``rank`` if given."""

    priority = 'LOWEST'

    def __init__(self, at: int, rank=None) -> None:
        self.at = at
        self.rank = rank

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        if runner.iter + 1 == self.at and self.rank in (None, runner.rank):
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


class HookFailure(RuntimeError):
    """Raised by :class:`RaiseBeforeIterHook` (an ordinary crash)."""


@HOOKS.register_module()
class RaiseBeforeIterHook(Hook):
    """Raise :class:`HookFailure` before iteration ``at`` (1-based)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        if runner.iter + 1 == self.at:
            raise HookFailure(f'crash before iteration {self.at}')
