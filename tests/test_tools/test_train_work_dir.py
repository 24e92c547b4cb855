"""tools/train.py never overwrites or resumes silently."""
import glob
import importlib.util
import os
import os.path as osp
import shutil

import pytest
import torch

from tests._configs import REPO, write_config


def _load_train_tool():
    spec = importlib.util.spec_from_file_location(
        'tool_train_work_dir', osp.join(REPO, 'tools', 'train.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train = _load_train_tool()


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
                       'delete them'):
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
    assert (f'--overwrite: deleted iter_2.pth, iter_9.pth from {work_dir}; '
            'starting from iteration 0.') in log
    assert not osp.exists(osp.join(work_dir, 'iter_9.pth'))
    assert torch.load(osp.join(work_dir, 'iter_2.pth'))['meta']['iter'] == 2


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
                       '--overwrite deletes its checkpoints; pass only one'):
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--resume', '--overwrite'
        ])
