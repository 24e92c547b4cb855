"""Fault matrix: what a user keeps, and is told, when a run goes wrong.

- ``kill -9`` while ``iter_4.pth`` is written. Kept: ``iter_2.pth`` whole,
  ``last_checkpoint`` naming it, no ``iter_4.pth`` (a hidden
  ``.iter_4.pth.*.tmp``). Told: ``--resume`` resumes from ``iter_2.pth``
  (it says so) and finishes.
- Disk full while ``iter_4.pth`` is saved. Kept: as above, and no
  temporary file. Told: ``OSError`` ENOSPC naming the file, its size, the
  free space and that nothing was replaced.
- A rank dies mid-epoch under ``dist_train.sh``. Kept: the checkpoints
  written before. Told: the launch exits non-zero without hanging;
  torchrun's report names the rank and its signal.
- ``last_checkpoint`` damaged (binary junk, or naming a truncated file).
  Kept: every checkpoint. Told: ``--resume`` warns in the run's log and
  resumes from the newest complete checkpoint.
- A failing ``--overwrite`` run: the earlier run stays byte-identical
  (``tests/test_tools/test_train_work_dir.py``).

The tiny PMSN config of the resume tests saves every 2 iterations.
"""
import errno
import glob
import os
import os.path as osp
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

from pmsn_mm.engine import atomic_file_backend
from pmsn_mm.engine.resume import find_resume_checkpoint
from tests._configs import REPO, TINY_PMSN, write_config
from tests._dist import free_port
from tests._tools import load_tool

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TRAIN = osp.join(REPO, 'tools', 'train.py')
train = load_tool('tools/train.py')


def _env() -> dict:
    # the crash configs import tests._kill_hooks
    return dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS='1')


def _crash_config(tmp_path, hook: str, **kwargs) -> str:
    args = ', '.join(f'{k}={v!r}' for k, v in kwargs.items())
    return write_config(
        tmp_path, TINY_PMSN + f"""
custom_imports = dict(imports=['pmsn_mm', 'tests._kill_hooks'],
                      allow_failed_imports=False)
custom_hooks = [dict(type='{hook}', {args})]
""", f'crash_{hook}.py')


def _log(work_dir: str) -> str:
    text = ''
    for path in sorted(glob.glob(osp.join(work_dir, '*', '*.log'))):
        with open(path) as f:
            text += f.read()
    return text


def _last_checkpoint(work_dir: str) -> str:
    with open(osp.join(work_dir, 'last_checkpoint')) as f:
        return f.read()


def test_kill_9_while_saving_keeps_the_previous_checkpoint(tmp_path):
    crashed = str(tmp_path / 'crashed')
    out = subprocess.run(
        [sys.executable, TRAIN,
         _crash_config(tmp_path, 'SIGKILLDuringSaveHook', at=4),
         '--work-dir', crashed], cwd=str(tmp_path), env=_env(),
        capture_output=True, text=True, timeout=300)
    assert out.returncode == -signal.SIGKILL
    names = os.listdir(crashed)
    assert 'iter_4.pth' not in names
    # the half-written temporary file is hidden, next to the checkpoints
    assert [n for n in names if n.startswith('.iter_4.pth.')]
    assert _last_checkpoint(crashed).endswith('iter_2.pth')
    assert torch.load(osp.join(crashed, 'iter_2.pth'))['meta']['iter'] == 2

    config = write_config(tmp_path, TINY_PMSN)
    out = subprocess.run(
        [sys.executable, TRAIN, config, '--work-dir', crashed, '--resume'],
        cwd=str(tmp_path), env=_env(), capture_output=True, text=True,
        timeout=300)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-3000:]
    assert f'--resume: resuming from {crashed}/iter_2.pth' in log
    assert 'resumed epoch: 0, iter: 2' in log
    assert torch.load(osp.join(crashed, 'iter_6.pth'))['meta']['iter'] == 6


def test_disk_full_while_saving(tmp_path, monkeypatch):
    """The file system refuses iter_4.pth's bytes (ENOSPC when they are
    flushed): the run stops with an error that says so, and the work dir
    is as it was after iter_2.pth."""
    real_fsync = os.fsync

    def fsync(fd):
        if '.iter_4.pth.' in os.readlink(f'/proc/self/fd/{fd}'):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(atomic_file_backend.os, 'fsync', fsync)
    config = write_config(tmp_path, TINY_PMSN)
    work_dir = str(tmp_path / 'work')
    with pytest.raises(OSError) as info:
        train.main([config, '--work-dir', work_dir])
    assert info.value.errno == errno.ENOSPC
    message = str(info.value)
    assert f'No space left on device: could not write {work_dir}/' \
        'iter_4.pth (' in message
    assert f'free in {work_dir}). Nothing was replaced: the previous file ' \
        'at that path, if any, is intact and no partial file was left.' \
        in message
    names = sorted(os.listdir(work_dir))
    assert 'iter_4.pth' not in names
    assert not [n for n in names if n.startswith('.')]  # no temporary
    assert _last_checkpoint(work_dir).endswith('iter_2.pth')
    assert torch.load(osp.join(work_dir, 'iter_2.pth'))['meta']['iter'] == 2
    assert find_resume_checkpoint(work_dir) == osp.join(work_dir,
                                                        'iter_2.pth')


def test_a_rank_dying_mid_epoch_ends_the_launch(tmp_path):
    """Rank 1 is killed after iteration 3 of 6; rank 0 must not wait for it
    forever."""
    work_dir = str(tmp_path / 'work')
    config = _crash_config(tmp_path, 'SIGKILLAfterIterHook', at=3, rank=1)
    env = dict(_env(), PORT=str(free_port()))
    start = time.monotonic()
    out = subprocess.run(
        ['bash', osp.join(REPO, 'tools', 'dist_train.sh'), config, '2',
         '--work-dir', work_dir, '--cfg-options',
         'train_dataloader.batch_size=4'],
        cwd=str(tmp_path), env=env, capture_output=True, text=True,
        timeout=240)
    log = out.stdout + out.stderr
    assert out.returncode != 0, log[-3000:]
    assert time.monotonic() - start < 200
    # torchrun's report names the failed rank and its signal
    assert 'rank      : 1' in log and 'Signal 9 (SIGKILL)' in log, \
        log[-3000:]
    assert 'Iter(train) [6/6]' not in log
    assert torch.load(osp.join(work_dir, 'iter_2.pth'))['meta']['iter'] == 2
    assert not osp.exists(osp.join(work_dir, 'iter_6.pth'))


@pytest.fixture(scope='module')
def four_iterations(tmp_path_factory):
    """A finished run with iter_2.pth and iter_4.pth: (config, work dir)."""
    tmp_path = tmp_path_factory.mktemp('four')
    config = write_config(tmp_path, TINY_PMSN)
    work_dir = str(tmp_path / 'work')
    train.main([config, '--work-dir', work_dir, '--cfg-options',
                'train_cfg.max_iters=4', 'experiment_name=first'])
    return config, work_dir


def _copy(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize('damage', ['junk', 'truncated'])
def test_a_damaged_last_checkpoint_record(tmp_path, four_iterations, damage):
    config, original = four_iterations
    work_dir = _copy(original, str(tmp_path / 'work'))
    if damage == 'junk':
        with open(osp.join(work_dir, 'last_checkpoint'), 'wb') as f:
            f.write(b'\x00\x89PNG\xff\xfe')
        resumed_from = 'iter_4.pth'
        warning = (f"{work_dir}/last_checkpoint names '\\x00\ufffdPNG"
                   "\ufffd\ufffd', which exists neither in the work dir nor "
                   'at that path')
    else:  # the record names iter_4.pth, cut short (e.g. a broken copy)
        path = osp.join(work_dir, 'iter_4.pth')
        with open(path, 'rb') as f:
            data = f.read()
        with open(path, 'wb') as f:
            f.write(data[:len(data) // 2])
        resumed_from = 'iter_2.pth'
        warning = (f'names {work_dir}/iter_4.pth, which is not a complete '
                   'checkpoint (truncated or not written by torch.save)')
    train.main([config, '--work-dir', work_dir, '--resume', '--cfg-options',
                'train_cfg.max_iters=5', f'experiment_name=resumed_{damage}'])
    log = _log(work_dir)
    assert warning in log
    assert (f'; resuming from the newest complete checkpoint in the work '
            f'dir, {work_dir}/{resumed_from}.') in log
    assert f'--resume: resuming from {work_dir}/{resumed_from}.' in log
    step = int(resumed_from[5])
    assert f'resumed epoch: 0, iter: {step}' in log
    assert torch.load(osp.join(work_dir, 'iter_5.pth'))['meta']['iter'] == 5
