"""Resume, start fresh or overwrite: every decision about a work dir that
may hold an earlier run (docs/distributed.md, "Work dirs" and "Preemption
and requeue"). Who calls it (nothing else decides these):

- ``tools/train.py``, ``tools/linear_probe_cached.py``:
  :func:`add_resume_arguments`, :func:`apply_resume_args` (onto
  ``cfg.resume``, ``cfg.load_from``, ``cfg.overwrite_work_dir``).
- ``PMSNRunner.train`` and ``run_cached_probe`` of
  ``tools/cached_probe.py`` (before extracting features): :func:`plan_run`.
- ``WorkDirOverwriteHook``: :func:`move_aside`, :func:`discard_moved`,
  :func:`restore_moved`, :func:`existing_checkpoints`.
- ``PreemptionHook``: :func:`record_last_checkpoint`,
  :func:`write_preemption_marker`, :func:`remove_preemption_marker`.
- ``RNGStateHook``: :func:`continues_checkpoint`.

mmengine's ``find_latest_checkpoint`` alone returns the record as written
(wrong for a copied work dir) and never checks the file is whole, hence
:func:`find_resume_checkpoint`.
"""
import argparse
import json
import logging
import os
import os.path as osp
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.runner.checkpoint import find_latest_checkpoint

from ..utils.refusal import NothingToDo
from .atomic_file_backend import atomic_write_bytes

#: Checkpoint files mmengine's CheckpointHook writes into the work dir.
CHECKPOINT_RE = re.compile(r'^(iter|epoch)_(\d+)\.pth$')
BEST_RE = re.compile(r'^best_.*\.pth$')
LAST_CHECKPOINT = 'last_checkpoint'
#: Folder (inside the work dir) holding an earlier run's checkpoints while
#: an ``--overwrite`` run has not written its own yet.
MOVED_ASIDE_PREFIX = 'overwritten_'
#: Left in the work dir by a run preempted after saving a checkpoint
#: (``PreemptionHook``); the same command then resumes.
PREEMPTION_MARKER = 'preempted.json'
#: ``--resume`` without a path.
AUTO_RESUME = 'auto'


# ------------------------------------------------------- the command line
def add_resume_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--resume [auto|PATH]`` and ``--overwrite`` to a tool's parser
    (read back by :func:`apply_resume_args`).

    Args:
        parser: The tool's argument parser.
    """
    parser.add_argument(
        '--resume',
        nargs='?',
        type=str,
        const=AUTO_RESUME,
        help='resume from the given checkpoint; without a path, resume from '
        'the latest checkpoint in the work dir (or start from iteration 0 if '
        'there is none)')
    parser.add_argument(
        '--overwrite',
        action='store_true',
        help='start from iteration 0 in a work dir that holds checkpoints of '
        'an earlier run, replacing them: they are moved aside once the model, '
        'data and optimizer are built, deleted when this run writes its '
        'first checkpoint and put back if it fails before (without this flag '
        'such a run is refused); sets overwrite_work_dir=True')


def apply_resume_args(cfg: Config, resume: Optional[str],
                      overwrite: bool) -> None:
    """Map ``--resume`` / ``--overwrite`` onto the config, in place; the
    decision is :func:`plan_run`'s, when the run starts.

    Args:
        cfg: The config.
        resume: ``None`` (no ``--resume``), :data:`AUTO_RESUME` (the work
            dir's last checkpoint: ``resume=True``, ``load_from=None``) or
            a checkpoint path (``resume=True``, ``load_from=PATH``).
        overwrite: ``--overwrite`` (``overwrite_work_dir=True``).
    """
    if resume == AUTO_RESUME:
        cfg.resume = True
        cfg.load_from = None
    elif resume is not None:
        cfg.resume = True
        cfg.load_from = resume
    if overwrite:
        cfg.overwrite_work_dir = True


# --------------------------------------------------------------- the plan
@dataclass
class RunPlan:
    """What :func:`plan_run` decided, besides ``cfg.resume``/``load_from``.

    Args:
        notes: Messages for the run's log.
        replace: Earlier checkpoint files ``--overwrite`` replaces (moved
            aside by ``WorkDirOverwriteHook`` when training starts).
        config_dump: With ``replace``: the earlier config dump
            (``<work_dir>/<config file name>``), if any.
        earlier_config: Its bytes, read when planned (``PMSNRunner.train``
            passes the bytes it read before building instead).
    """

    notes: List[str] = field(default_factory=list)
    replace: List[str] = field(default_factory=list)
    config_dump: Optional[str] = None
    earlier_config: Optional[bytes] = None


def plan_run(cfg: Config, overwrite: Optional[bool] = None) -> RunPlan:
    """Decide whether a run resumes, starts fresh or overwrites (touches
    no file): ``--resume`` takes :func:`find_resume_checkpoint`;
    ``preempted.json`` resumes; existing checkpoints are refused unless
    ``overwrite``; a finished run raises :class:`NothingToDo`.

    Args:
        cfg: The config: ``work_dir``, ``resume``, ``load_from``,
            ``train_cfg`` (for a finished run) and ``filename`` (the config
            dump); ``resume`` and ``load_from`` are updated in place.
        overwrite: Replace an earlier run's checkpoints (``--overwrite``);
            None: ``cfg.overwrite_work_dir``.

    Returns:
        The plan: log messages and the files to replace.

    Raises:
        ValueError: If both resuming and ``overwrite`` are asked for.
        FileExistsError: If the work dir holds checkpoints and the run
            neither resumes nor overwrites.
        NothingToDo: If the checkpoint resumed from ends the schedule.
    """
    if overwrite is None:
        overwrite = bool(cfg.get('overwrite_work_dir', False))
    plan = _decide(cfg, overwrite)
    if cfg.get('resume', False) and cfg.get('load_from'):
        done = finished_run(cfg.load_from, cfg.get('train_cfg'))
        if done is not None:
            raise NothingToDo(
                f'Nothing to train: {done} To train again from iteration 0 '
                'pass --overwrite (or another --work-dir); to train longer '
                'raise the schedule (e.g. --cfg-options '
                'train_cfg.max_iters=N).')
    return plan


def _decide(cfg: Config, overwrite: bool) -> RunPlan:
    """:func:`plan_run` but for the finished run."""
    work_dir = cfg.work_dir
    notes = [
        f'{folder} holds checkpoints of an earlier run that an interrupted '
        '--overwrite run moved aside; move them back or delete the folder.'
        for folder in leftover_moved(work_dir)
    ]
    if cfg.get('resume', False):
        if overwrite:
            raise ValueError(
                '--resume continues the run in the work dir and --overwrite '
                'replaces its checkpoints; pass only one of them.')
        if cfg.get('load_from') is not None:
            return RunPlan(notes)
        checkpoint = find_resume_checkpoint(work_dir, notes)
        if checkpoint is None:
            cfg.resume = False
            return RunPlan(notes + [
                f'--resume: no checkpoint found in {work_dir}, starting '
                'from iteration 0.'
            ])
        cfg.load_from = checkpoint
        return RunPlan(notes + [f'--resume: resuming from {checkpoint}.'])
    marker = read_preemption_marker(work_dir)
    # the requeued Slurm job itself (same job id): its command line is the
    # first one's, --overwrite included
    job = (marker or {}).get('slurm_job_id')
    requeued = job is not None and job == os.environ.get('SLURM_JOB_ID')
    if marker is not None and (requeued or not overwrite):
        checkpoint = find_resume_checkpoint(work_dir, notes)
        if checkpoint is not None:
            cfg.resume = True
            cfg.load_from = checkpoint
            when = (f' at iteration {marker["iter"]}'
                    if 'iter' in marker else '')
            why = f' by {marker["signal"]}' if 'signal' in marker else ''
            return RunPlan(notes + [
                f'Resuming the run stopped{why}{when} from {checkpoint} '
                f'({PREEMPTION_MARKER} in the work dir; --overwrite starts '
                'from iteration 0 instead).'
            ])
    existing = existing_checkpoints(work_dir)
    if not existing:
        return RunPlan(notes)
    if marker is not None:
        existing.append(PREEMPTION_MARKER)
    if not overwrite:
        newest = find_resume_checkpoint(work_dir)
        resume = (f'pass --resume to continue from {newest}'
                  if newest is not None else
                  'pass --resume to continue from the last checkpoint')
        raise FileExistsError(
            f'The work dir {work_dir} already holds checkpoints of an earlier '
            f'run ({", ".join(existing)}), which this run would overwrite. '
            f'{resume[0].upper()}{resume[1:]}; pass --overwrite to replace '
            'them and start from iteration 0 (--cfg-options '
            'overwrite_work_dir=True under another tool); or choose another '
            '--work-dir.')
    dump = osp.basename(cfg.filename) if cfg.filename else None
    if dump is None or not osp.isfile(osp.join(work_dir, dump)):
        return RunPlan(notes, existing)
    with open(osp.join(work_dir, dump), 'rb') as f:
        return RunPlan(notes, existing, dump, f.read())


# --------------------------------------------- the last-checkpoint search
def is_complete_checkpoint(path: str) -> bool:
    """Whether ``path`` is a whole ``torch.save`` file: reads only the
    zip's central directory, which a truncated file lacks.

    Args:
        path: A checkpoint file.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            return bool(archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


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


def _warn(message: str, notes: Optional[List[str]]) -> None:
    if notes is None:
        print_log(message, logger='current', level=logging.WARNING)
    else:
        notes.append(message)


def newest_checkpoint(work_dir: str,
                      notes: Optional[List[str]] = None) -> Optional[str]:
    """The complete ``iter_N.pth`` with the largest N, else the newest
    complete ``epoch_N.pth`` (truncated files are skipped with a warning).

    Args:
        work_dir: Folder to search.
        notes: Where warnings go (for the run's log); None logs them.

    Returns:
        The path, or None if there is none.
    """
    found = _numbered_checkpoints(work_dir)
    for kind in ('iter', 'epoch'):
        for _, name in sorted(((step, name) for k, step, name in found
                               if k == kind), reverse=True):
            path = osp.join(work_dir, name)
            if is_complete_checkpoint(path):
                return path
            _warn(
                f'{path} is not a complete checkpoint (truncated or not '
                'written by torch.save); skipping it.', notes)
    return None


def _recorded_checkpoint(work_dir: str) -> Optional[str]:
    """The text of ``<work_dir>/last_checkpoint`` (mmengine's
    ``find_latest_checkpoint``), or None without the file."""
    if not osp.isfile(osp.join(work_dir, LAST_CHECKPOINT)):
        return None  # (mmengine would log that it found none)
    try:
        return find_latest_checkpoint(work_dir)
    except UnicodeDecodeError:  # a damaged record: mmengine reads text
        with open(osp.join(work_dir, LAST_CHECKPOINT), 'rb') as f:
            return f.read().decode('utf-8', 'replace').strip()


def find_resume_checkpoint(work_dir: str,
                           notes: Optional[List[str]] = None
                           ) -> Optional[str]:
    """The checkpoint ``--resume`` (without a path) continues from:
    ``last_checkpoint``'s file name inside ``work_dir``, else its path as
    written (a separate ``out_dir``), else :func:`newest_checkpoint`.

    Args:
        work_dir: The run's work dir.
        notes: Where warnings go (for the run's log); None logs them.

    Returns:
        The checkpoint path, or None if ``work_dir`` holds none.
    """
    record = osp.join(work_dir, LAST_CHECKPOINT)
    recorded = _recorded_checkpoint(work_dir)
    problem = ''
    if recorded:
        local = osp.join(work_dir, osp.basename(recorded))
        for candidate in (local, recorded):
            if '\0' not in candidate and osp.isfile(candidate):
                if is_complete_checkpoint(candidate):
                    return candidate
                problem = (f'{record} names {candidate}, which is not a '
                           'complete checkpoint (truncated or not written '
                           'by torch.save)')
                break
        else:
            problem = (f'{record} names {recorded!r}, which exists neither '
                       'in the work dir nor at that path')
    elif recorded is not None:
        problem = f'{record} is empty'
    newest = newest_checkpoint(work_dir, notes)
    if problem and newest is not None:
        _warn(
            f'{problem}; resuming from the newest complete checkpoint in the '
            f'work dir, {newest}.', notes)
    return newest


def record_last_checkpoint(work_dir: str, checkpoint: str) -> None:
    """Write ``<work_dir>/last_checkpoint`` (atomically), as
    ``CheckpointHook`` does, for a checkpoint saved outside it.

    Args:
        work_dir: The run's work dir.
        checkpoint: The checkpoint's path.
    """
    atomic_write_bytes(checkpoint.encode('utf-8'),
                       osp.join(work_dir, LAST_CHECKPOINT))


# ------------------------------------------------------- finished, resumed
def finished_run(checkpoint: str, train_cfg: Any) -> Optional[str]:
    """Whether resuming from ``checkpoint`` has nothing left to train
    (reads its ``meta`` memory-mapped; an unreadable file: None).

    Args:
        checkpoint: The checkpoint a resume would load.
        train_cfg: The run's ``train_cfg`` (``max_iters`` / ``max_epochs``).

    Returns:
        A sentence saying where the run ended, or None if it has more to
        train (or nothing can be told).
    """
    if not isinstance(train_cfg, Mapping):
        return None
    import torch
    try:
        meta = torch.load(checkpoint, map_location='cpu', mmap=True,
                          weights_only=True).get('meta') or {}
    except Exception:  # noqa: BLE001  left to mmengine's resume
        return None
    for key, unit in (('max_iters', 'iter'), ('max_epochs', 'epoch')):
        total, done = train_cfg.get(key), meta.get(unit)
        if isinstance(total, int) and isinstance(done, int) and \
                done >= total:
            name = 'iteration' if unit == 'iter' else 'epoch'
            return (f'the run in {osp.dirname(osp.abspath(checkpoint))} '
                    f'already finished: {osp.basename(checkpoint)} is at '
                    f'{name} {done} of {total}.')
    return None


def continues_checkpoint(loop_iter: int,
                         checkpoint_iter: Optional[int]) -> bool:
    """Whether training resumes a loaded checkpoint (mmengine's resume sets
    the loop's iteration to its ``meta['iter']``; loading weights: 0).

    Args:
        loop_iter: ``runner.iter`` when training starts.
        checkpoint_iter: The loaded checkpoint's ``meta['iter']``.
    """
    return loop_iter != 0 and checkpoint_iter == loop_iter


# ---------------------------------------------------- the preemption marker
def write_preemption_marker(work_dir: str, checkpoint: str, iteration: int,
                            signal_name: str,
                            slurm_job_id: Optional[str] = None) -> str:
    """Record (atomically) that the run stopped on a signal after saving
    ``checkpoint`` at ``iteration``.

    Args:
        work_dir: The run's work dir.
        checkpoint: The checkpoint saved on the signal.
        iteration: Its iteration.
        signal_name: E.g. ``'SIGUSR1'``.
        slurm_job_id: ``SLURM_JOB_ID``, if any (a requeued job keeps it and
            resumes even with ``--overwrite``).

    Returns:
        The marker's path.
    """
    path = osp.join(work_dir, PREEMPTION_MARKER)
    record = dict(checkpoint=checkpoint, iter=iteration, signal=signal_name)
    if slurm_job_id:
        record['slurm_job_id'] = slurm_job_id
    atomic_write_bytes(json.dumps(record).encode('utf-8'), path)
    return path


def read_preemption_marker(work_dir: str) -> Optional[Dict[str, Any]]:
    """The record of :func:`write_preemption_marker`, or None without one.

    Args:
        work_dir: The run's work dir (need not exist).

    Returns:
        ``checkpoint``, ``iter`` and ``signal`` (a damaged file: ``{}``).
    """
    path = osp.join(work_dir, PREEMPTION_MARKER)
    if not osp.isfile(path):
        return None
    try:
        with open(path, 'rb') as f:
            record = json.loads(f.read().decode('utf-8'))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def remove_preemption_marker(work_dir: str) -> bool:
    """Delete the marker (the run finished).

    Args:
        work_dir: The run's work dir.

    Returns:
        True if there was one.
    """
    path = osp.join(work_dir, PREEMPTION_MARKER)
    if not osp.isfile(path):
        return False
    os.remove(path)
    return True


# --------------------------------------- carrying out an overwrite (hook)
def move_aside(work_dir: str, names: List[str], tag: str) -> str:
    """Move ``names`` from ``work_dir`` into a new folder
    ``<work_dir>/overwritten_<tag>/`` (renames within one file system).

    Args:
        work_dir: The run's work dir.
        names: File names in it (:func:`existing_checkpoints`).
        tag: Distinguishes the folder, e.g. the new run's timestamp.

    Returns:
        The folder's path.
    """
    folder = osp.join(work_dir, MOVED_ASIDE_PREFIX + tag)
    os.makedirs(folder)  # a new folder: fails rather than mixing two runs
    for name in names:
        src = osp.join(work_dir, name)
        if osp.isfile(src):
            os.replace(src, osp.join(folder, name))
    return folder


def restore_moved(work_dir: str, folder: str) -> List[str]:
    """Move the files of :func:`move_aside`'s ``folder`` back into
    ``work_dir`` and remove the folder.

    Args:
        work_dir: The run's work dir.
        folder: The folder :func:`move_aside` returned.

    Returns:
        The restored file names.

    Raises:
        FileExistsError: If ``work_dir`` already holds a file of that name
            (the new run's); nothing is moved then.
    """
    names = sorted(os.listdir(folder))
    clash = [n for n in names if osp.exists(osp.join(work_dir, n))]
    if clash:
        raise FileExistsError(
            f'Cannot put the earlier run\'s files back from {folder}: '
            f'{work_dir} holds new files of the same names ({clash}).')
    for name in names:
        os.replace(osp.join(folder, name), osp.join(work_dir, name))
    os.rmdir(folder)
    return names


def discard_moved(folder: str) -> None:
    """Delete :func:`move_aside`'s folder (the new run has checkpoints).

    Args:
        folder: The folder :func:`move_aside` returned.
    """
    shutil.rmtree(folder)


def leftover_moved(work_dir: str) -> List[str]:
    """Folders an interrupted ``--overwrite`` run left in ``work_dir``
    (killed before it wrote a checkpoint or could put the files back).

    Args:
        work_dir: The run's work dir (need not exist).
    """
    if not osp.isdir(work_dir):
        return []
    return sorted(
        osp.join(work_dir, n) for n in os.listdir(work_dir)
        if n.startswith(MOVED_ASIDE_PREFIX)
        and osp.isdir(osp.join(work_dir, n)))
