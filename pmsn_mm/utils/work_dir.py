"""Work-dir safety: find the checkpoint to resume, refuse silent overwrites.

Used by ``tools/train.py`` before the runner is built:

- :func:`find_resume_checkpoint` resolves ``--resume`` (auto): the file
  named in ``<work_dir>/last_checkpoint`` *relative to the work dir* (a
  copied or moved work dir resumes from its own files, not from the
  absolute path of the original), else the newest ``iter_N.pth`` /
  ``epoch_N.pth`` (a run killed before ``last_checkpoint`` was written).
- :func:`existing_checkpoints` lists what a fresh run would overwrite;
  :func:`remove_checkpoints` removes it (``--overwrite``).

Kept instead of ``mmengine.runner.find_latest_checkpoint``: it returns the
``last_checkpoint`` text as written (the original run's path, None without
the file) and never falls back to the newest ``iter_N``/``epoch_N.pth``.
"""
import logging
import os
import os.path as osp
import re
from typing import List, Optional, Tuple

from mmengine.config import Config
from mmengine.logging import print_log

#: Checkpoint files mmengine's CheckpointHook writes into the work dir.
CHECKPOINT_RE = re.compile(r'^(iter|epoch)_(\d+)\.pth$')
BEST_RE = re.compile(r'^best_.*\.pth$')
LAST_CHECKPOINT = 'last_checkpoint'


def _numbered_checkpoints(work_dir: str) -> List[Tuple[str, int, str]]:
    if not osp.isdir(work_dir):
        return []
    found = []
    for name in os.listdir(work_dir):
        match = CHECKPOINT_RE.match(name)
        if match and osp.isfile(osp.join(work_dir, name)):
            found.append((match.group(1), int(match.group(2)), name))
    return found


def existing_checkpoints(work_dir: str) -> List[str]:
    """Checkpoint files in ``work_dir`` that a new run would overwrite.

    Args:
        work_dir: The run's work dir (need not exist).

    Returns:
        Sorted file names: ``iter_N.pth``, ``epoch_N.pth``, ``best_*.pth``
        and ``last_checkpoint``.
    """
    if not osp.isdir(work_dir):
        return []
    return sorted(
        name for name in os.listdir(work_dir)
        if (CHECKPOINT_RE.match(name) or BEST_RE.match(name)
            or name == LAST_CHECKPOINT) and osp.isfile(
                osp.join(work_dir, name)))


def newest_checkpoint(work_dir: str) -> Optional[str]:
    """The ``iter_N.pth`` with the largest N, else the newest ``epoch_N.pth``.

    Args:
        work_dir: Folder to search.

    Returns:
        The path, or None if there is none.
    """
    found = _numbered_checkpoints(work_dir)
    for kind in ('iter', 'epoch'):
        steps = [(step, name) for k, step, name in found if k == kind]
        if steps:
            return osp.join(work_dir, max(steps)[1])
    return None


def find_resume_checkpoint(work_dir: str) -> Optional[str]:
    """The checkpoint that ``--resume`` (without a path) continues from.

    ``last_checkpoint`` holds the path CheckpointHook wrote, which may be
    absolute or relative to the original process's current folder. It is
    resolved relative to ``work_dir`` first (its file name inside
    ``work_dir``), then as written (checkpoints saved to a separate
    ``out_dir``). If it is missing, empty or names no existing file, the
    newest numbered checkpoint in ``work_dir`` is used.

    Args:
        work_dir: The run's work dir.

    Returns:
        The checkpoint path, or None if ``work_dir`` holds none.
    """
    record = osp.join(work_dir, LAST_CHECKPOINT)
    recorded = ''
    if osp.isfile(record):
        with open(record) as f:
            recorded = f.read().strip()
    if recorded:
        local = osp.join(work_dir, osp.basename(recorded))
        if osp.isfile(local):
            return local
        if osp.isfile(recorded):
            return recorded
    newest = newest_checkpoint(work_dir)
    if recorded and newest is not None:
        print_log(
            f'{record} names {recorded!r}, which exists neither in the work '
            f'dir nor at that path; resuming from the newest checkpoint in '
            f'the work dir, {newest}.',
            logger='current',
            level=logging.WARNING)
    return newest


def remove_checkpoints(work_dir: str) -> List[str]:
    """Delete :func:`existing_checkpoints` (for ``--overwrite``).

    Args:
        work_dir: The run's work dir.

    Returns:
        The removed file names.
    """
    names = existing_checkpoints(work_dir)
    for name in names:
        os.remove(osp.join(work_dir, name))
    return names


def prepare_work_dir(cfg: Config, overwrite: bool = False,
                     rank: int = 0) -> List[str]:
    """Decide how a ``tools/train.py`` run treats its work dir.

    - ``--resume`` without a path: ``cfg.load_from`` is set to
      :func:`find_resume_checkpoint`; if there is none, ``cfg.resume`` is
      turned off and the run starts from iteration 0 (said in the log).
    - A run that does not resume, into a work dir holding checkpoints:
      refused, unless ``overwrite``; then rank 0 deletes them first.

    Args:
        cfg: The merged config (``work_dir``, ``resume``, ``load_from``);
            updated in place.
        overwrite: The ``--overwrite`` flag.
        rank: This process's rank; only rank 0 deletes files.

    Returns:
        Messages for the run's log.

    Raises:
        ValueError: If both resuming and ``overwrite`` are asked for.
        FileExistsError: If the work dir holds checkpoints and the run
            neither resumes nor overwrites.
    """
    work_dir = cfg.work_dir
    if cfg.get('resume', False):
        if overwrite:
            raise ValueError(
                '--resume continues the run in the work dir and --overwrite '
                'deletes its checkpoints; pass only one of them.')
        if cfg.get('load_from') is not None:
            return []
        checkpoint = find_resume_checkpoint(work_dir)
        if checkpoint is None:
            cfg.resume = False
            return [f'--resume: no checkpoint found in {work_dir}, starting '
                    'from iteration 0.']
        cfg.load_from = checkpoint
        return [f'--resume: resuming from {checkpoint}.']
    existing = existing_checkpoints(work_dir)
    if not existing:
        return []
    if not overwrite:
        newest = find_resume_checkpoint(work_dir)
        resume = (f'pass --resume to continue from {newest}'
                  if newest is not None else
                  'pass --resume to continue from the last checkpoint')
        raise FileExistsError(
            f'The work dir {work_dir} already holds checkpoints of an earlier '
            f'run ({", ".join(existing)}), which this run would overwrite. '
            f'{resume[0].upper()}{resume[1:]}; pass --overwrite to delete '
            'them and start from iteration 0; or choose another --work-dir.')
    if rank == 0:
        remove_checkpoints(work_dir)
    return [f'--overwrite: deleted {", ".join(existing)} from {work_dir}; '
            'starting from iteration 0.']
