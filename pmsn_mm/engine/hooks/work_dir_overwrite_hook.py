"""``--overwrite`` without losing the earlier run before the new one works
(docs/distributed.md, "Work dirs"): ``before_train``, once everything is
built, moves the files (and the earlier config dump, read before mmengine
rewrote it) into ``<work_dir>/overwritten_<timestamp>/``, deleted once the
new run has a checkpoint; :meth:`WorkDirOverwriteHook.restore` puts them
back if it stops before.
"""
import os
import os.path as osp
from typing import List, Optional, cast

from mmengine.dist import is_main_process
from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmpretrain.registry import HOOKS

from ..atomic_file_backend import atomic_write_bytes
from ..resume import (RunPlan, discard_moved, existing_checkpoints, move_aside,
                      restore_moved)


def _read(path: str) -> Optional[bytes]:
    if not osp.isfile(path):
        return None
    with open(path, 'rb') as f:
        return f.read()


@HOOKS.register_module()
class WorkDirOverwriteHook(Hook):
    """Replace an earlier run's checkpoints only once the new run has its
    own (files are moved by rank 0 only).

    Args:
        work_dir: The run's work dir.
        plan: What ``plan_run`` decided (``replace``: file names to
            replace; ``config_dump``: the earlier config dump's name).
        dump: The earlier config dump's bytes, read before the runner
            rewrote it (None: the plan's ``earlier_config``).
    """

    # after every other hook: files move only when all else has started,
    # and a checkpoint saved by CheckpointHook in this iteration is seen
    priority = 'LOWEST'

    def __init__(self, work_dir: str, plan: RunPlan,
                 dump: Optional[bytes] = None) -> None:
        self.work_dir = work_dir
        self.names = list(plan.replace)
        self.folder: Optional[str] = None
        self.dump_name = plan.config_dump if self.names else None
        self.dump: Optional[bytes] = None
        if self.dump_name is not None:
            self.dump = dump if dump is not None else plan.earlier_config

    def before_train(self, runner) -> None:
        """Move the earlier run's files aside (everything is built now)."""
        if not is_main_process() or not self.names:
            return
        self.folder = move_aside(self.work_dir, self.names, runner.timestamp)
        moved = list(self.names)
        if self.dump is not None:  # then dump_name is not None
            atomic_write_bytes(self.dump, osp.join(
                self.folder, cast(str, self.dump_name)))
            moved.append(f'its config {self.dump_name}')
        runner.logger.info(
            f'--overwrite: moved {", ".join(moved)} of the earlier run to '
            f'{self.folder}; deleted once this run writes a checkpoint, put '
            'back if it stops before.')

    def discard_if_saved(self, runner) -> None:
        """Delete the moved files if this run has written a checkpoint
        (also called by ``PreemptionHook`` before its process exits).

        Args:
            runner: The runner (for the log).
        """
        if self.folder is None or not existing_checkpoints(self.work_dir):
            return
        discard_moved(self.folder)
        runner.logger.info(
            f'--overwrite: this run wrote a checkpoint; deleted the earlier '
            f'run\'s {", ".join(self.names)} ({self.folder}).')
        self.folder = None
        self.dump = None

    def after_train_iter(self, runner, batch_idx: int, data_batch=None,
                         outputs=None) -> None:
        """Delete the moved files once a checkpoint of this run exists."""
        self.discard_if_saved(runner)

    def after_train_epoch(self, runner) -> None:
        """As :meth:`after_train_iter` (epoch-based checkpoints)."""
        self.discard_if_saved(runner)

    def after_val_epoch(self, runner, metrics=None) -> None:
        """As :meth:`after_train_iter` (``best_*.pth``)."""
        self.discard_if_saved(runner)

    def after_train(self, runner) -> None:
        """A run that wrote no checkpoint gives the old files back."""
        self.discard_if_saved(runner)
        self.restore()

    def restore(self) -> None:
        """Put the earlier run's files back (this run stopped before it
        saved a checkpoint, or before its runner was even built)."""
        if not is_main_process():
            return
        restored: List[str] = []
        # ``dump_name`` is not None while ``dump`` is not None
        if self.folder is not None:
            dump = osp.join(self.folder, self.dump_name or '')
            if self.dump is not None and osp.isfile(dump):
                # the new run's dump stands where the earlier one goes back
                atomic_write_bytes(self.dump, osp.join(
                    self.work_dir, cast(str, self.dump_name)))
                restored.append(cast(str, self.dump_name))
                os.remove(dump)
            restored = restore_moved(self.work_dir, self.folder) + restored
            self.folder = None
        elif self.dump is not None:
            path = osp.join(self.work_dir, cast(str, self.dump_name))
            if _read(path) != self.dump:
                atomic_write_bytes(self.dump, path)
                restored.append(cast(str, self.dump_name))
        self.dump = None
        if restored:
            print_log(
                '--overwrite: this run stopped before writing a checkpoint; '
                f'put the earlier run\'s {", ".join(sorted(restored))} back '
                f'into {self.work_dir}.',
                logger='current')
