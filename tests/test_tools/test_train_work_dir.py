"""tools/train.py never overwrites or resumes silently."""
import glob
import os
import os.path as osp
import re
import shutil

import pytest
import torch

from tests._configs import TINY_CLASSIFIER, write_config
from tests._kill_hooks import HookFailure
from tests._tools import load_tool

train = load_tool('tools/train.py')


def _main(cfg, work_dir, name, *flags, options=()):
    train.main([
        cfg, '--work-dir', work_dir, *flags, '--cfg-options',
        f'experiment_name={name}', *options
    ])
    text = ''
    for log in glob.glob(osp.join(work_dir, '*', '*.log')):
        with open(log) as f:
            text += f.read()
    return text


def test_rerun_into_a_work_dir_with_checkpoints_is_refused(tmp_path):
    cfg = write_config(tmp_path)
    work_dir = str(tmp_path / 'work')
    os.makedirs(work_dir)
    torch.save(dict(meta=dict(iter=2)), osp.join(work_dir, 'iter_2.pth'))
    with pytest.raises(FileExistsError,
                       match=r'already holds checkpoints of an earlier run '
                       r'\(iter_2\.pth\).*Pass --resume to continue from '
                       rf'{work_dir}/iter_2\.pth; pass --overwrite to '
                       'replace them'):
        train.main([cfg, '--work-dir', work_dir])
    assert os.listdir(work_dir) == ['iter_2.pth']


def test_overwrite_starts_from_zero(tmp_path):
    cfg = write_config(tmp_path)
    work_dir = str(tmp_path / 'work')
    os.makedirs(work_dir)
    stale = dict(meta=dict(iter=9))
    torch.save(stale, osp.join(work_dir, 'iter_9.pth'))
    torch.save(stale, osp.join(work_dir, 'iter_2.pth'))
    log = _main(cfg, work_dir, 'overwrite', '--overwrite')
    moved = re.search(r'--overwrite: moved iter_2.pth, iter_9.pth of the '
                      rf'earlier run to ({work_dir}/overwritten_\d+_\d+); '
                      'deleted once this run writes a checkpoint, put back '
                      'if it stops before.', log)
    assert moved, log
    assert ("--overwrite: this run wrote a checkpoint; deleted the earlier "
            f"run's iter_2.pth, iter_9.pth ({moved.group(1)}).") in log
    assert not osp.exists(moved.group(1))
    assert not osp.exists(osp.join(work_dir, 'iter_9.pth'))
    assert torch.load(osp.join(work_dir, 'iter_2.pth'))['meta']['iter'] == 2


def _files(folder):
    """``{relative path: bytes}`` of every file under ``folder``."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = osp.join(root, name)
            with open(path, 'rb') as f:
                found[osp.relpath(path, folder)] = f.read()
    return found


@pytest.fixture(scope='module')
def earlier_run(tmp_path_factory):
    """A finished 2-iteration run: (config, work dir, its files)."""
    tmp_path = tmp_path_factory.mktemp('earlier')
    cfg = write_config(tmp_path)
    work_dir = str(tmp_path / 'work')
    _main(cfg, work_dir, 'earlier')
    # mmengine names a run's log folder by the second it started in: date
    # the earlier run back, or a test starting in the same second would
    # log into its folder (a clash no real pair of runs has)
    logs = [n for n in os.listdir(work_dir) if re.fullmatch(r'\d+_\d+', n)]
    assert len(logs) == 1, logs
    os.rename(osp.join(work_dir, logs[0]),
              osp.join(work_dir, '20000101_000000'))
    files = _files(work_dir)
    assert {'iter_2.pth', 'last_checkpoint'} <= set(files)
    return cfg, work_dir, files


CRASH_HOOK = """
custom_imports = dict(imports=['pmsn_mm', 'tests._kill_hooks'],
                      allow_failed_imports=False)
custom_hooks = [dict(type='RaiseBeforeIterHook', at=1)]
"""


@pytest.mark.parametrize('extra,option,error', [
    # a mistyped type (refused before anything is built)
    ('', 'model.head.type=LinearClsHeadd', KeyError),
    # the model cannot be built
    ('', 'model.head.num_classes=0', ValueError),
    # the dataset cannot be built (inside runner.train())
    ('', 'train_dataloader.dataset.num_samples=0', ValueError),
    # the optimizer cannot be built (inside runner.train())
    ('', 'optim_wrapper.optimizer.lr=-1.0', ValueError),
    # the first iteration fails, after the old files were moved aside
    (CRASH_HOOK, 'train_cfg.max_iters=2', HookFailure),
], ids=['type', 'model', 'dataset', 'optimizer', 'first-iteration'])
def test_a_failing_overwrite_run_keeps_the_earlier_run(
        tmp_path, earlier_run, extra, option, error):
    """--overwrite with a broken config: every file of the earlier run is
    still there, byte-identical (its new log folder is all it adds)."""
    _, original, files = earlier_run
    work_dir = str(tmp_path / 'work')
    shutil.copytree(original, work_dir)
    # the same file name: the new run's config dump replaces the old one
    cfg = write_config(tmp_path, TINY_CLASSIFIER + extra)
    with pytest.raises(error):
        # a name of its own: mmengine shares the logger (and its file) of
        # runs with the same name started in the same second
        train.main([cfg, '--work-dir', work_dir, '--overwrite',
                    '--cfg-options', option,
                    f'experiment_name=overwrite_{tmp_path.name}'])
    after = _files(work_dir)
    assert {name: after.get(name) for name in files} == files
    new = set(after) - set(files)
    # the new run's log folder: a new folder named by its timestamp
    folders = {name.split(os.sep)[0] for name in new}
    assert len(folders) <= 1 and all(
        re.fullmatch(r'\d+_\d+', f) for f in folders), new
    assert not {name.split(os.sep)[0] for name in files} & folders
    assert not [n for n in os.listdir(work_dir)
                if n.startswith('overwritten_')]
    if extra is CRASH_HOOK:  # the files had been moved and came back
        log = ''.join(after[n].decode() for n in new if n.endswith('.log'))
        assert "--overwrite: this run stopped before writing a checkpoint; " \
            "put the earlier run's iter_2.pth, last_checkpoint, tiny.py back" \
            in log


def test_resume_without_checkpoint_says_it_starts_from_zero(tmp_path):
    cfg = write_config(tmp_path)
    work_dir = str(tmp_path / 'work')
    log = _main(cfg, work_dir, 'empty-resume', '--resume')
    assert (f'--resume: no checkpoint found in {work_dir}, starting from '
            'iteration 0.') in log
    assert 'Auto resumed from the latest checkpoint None' not in log
    assert 'resumed epoch' not in log
    assert torch.load(osp.join(work_dir, 'iter_2.pth'))['meta']['iter'] == 2


def test_copied_work_dir_resumes_from_the_copy(tmp_path):
    cfg = write_config(tmp_path)
    original = str(tmp_path / 'original')
    _main(cfg, original, 'first')
    with open(osp.join(original, 'last_checkpoint')) as f:
        assert osp.isabs(f.read())  # what mmengine writes
    copy = str(tmp_path / 'copy')
    shutil.copytree(original, copy)
    # the copy differs from the original: resuming must read the copy
    ckpt = torch.load(osp.join(copy, 'iter_2.pth'))
    ckpt['state_dict']['head.fc.weight'].fill_(0.5)
    torch.save(ckpt, osp.join(copy, 'iter_2.pth'))
    log = _main(cfg, copy, 'resume-copy', '--resume',
                options=['train_cfg.max_iters=3'])
    assert f'--resume: resuming from {copy}/iter_2.pth.' in log
    assert 'resumed epoch: 0, iter: 2' in log
    resumed = torch.load(osp.join(copy, 'iter_3.pth'))['state_dict']
    # one AdamW step (lr 1e-3) away from the edited 0.5, not from the original
    assert (resumed['head.fc.weight'] - 0.5).abs().max() < 0.01
    assert not osp.exists(osp.join(original, 'iter_3.pth'))


def test_resume_and_overwrite_together_are_refused(tmp_path):
    cfg = write_config(tmp_path)
    with pytest.raises(ValueError,
                       match='--resume continues the run in the work dir and '
                       '--overwrite replaces its checkpoints; pass only '
                       'one'):
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--resume', '--overwrite'
        ])
