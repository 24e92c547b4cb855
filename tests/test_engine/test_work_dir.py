"""Which checkpoint --resume takes, and when a work dir is refused."""
import os
import os.path as osp
import shutil

import pytest
import torch
from mmengine.config import Config

from pmsn_mm.engine.work_dir import (PREEMPTION_MARKER, WorkDirPlan,
                                     discard_moved, existing_checkpoints,
                                     find_resume_checkpoint,
                                     is_complete_checkpoint, move_aside,
                                     newest_checkpoint, prepare_work_dir,
                                     read_preemption_marker,
                                     remove_preemption_marker, restore_moved,
                                     write_preemption_marker)


def _touch(folder, *names):
    """Complete ``torch.save`` files for ``*.pth`` names, text otherwise."""
    os.makedirs(folder, exist_ok=True)
    for name in names:
        path = osp.join(folder, name)
        if name.endswith('.pth'):
            torch.save(dict(name=name), path)
        else:
            with open(path, 'w') as f:
                f.write('x')


def _truncate(path, keep=0.5):
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:int(len(data) * keep)])


def _record(folder, text):
    with open(osp.join(folder, 'last_checkpoint'), 'w') as f:
        f.write(text)


def test_copied_work_dir_resumes_from_its_own_files(tmp_path):
    original = str(tmp_path / 'original')
    _touch(original, 'iter_2.pth', 'iter_4.pth')
    _record(original, osp.join(original, 'iter_4.pth'))  # absolute
    copy = str(tmp_path / 'copy')
    shutil.copytree(original, copy)
    # the original still exists, and is NOT what the copy resumes from
    assert find_resume_checkpoint(copy) == osp.join(copy, 'iter_4.pth')


def test_relative_record_is_resolved_in_the_work_dir(tmp_path, monkeypatch):
    work = str(tmp_path / 'work')
    _touch(work, 'iter_6.pth')
    _record(work, './work_dirs/run/iter_6.pth')  # relative to the old cwd
    monkeypatch.chdir(tmp_path)
    assert find_resume_checkpoint(work) == osp.join(work, 'iter_6.pth')


def test_record_outside_the_work_dir_is_used_as_written(tmp_path):
    work, out = str(tmp_path / 'work'), str(tmp_path / 'out' / 'work')
    _touch(out, 'iter_3.pth')
    os.makedirs(work)
    _record(work, osp.join(out, 'iter_3.pth'))  # CheckpointHook(out_dir=)
    assert find_resume_checkpoint(work) == osp.join(out, 'iter_3.pth')


@pytest.mark.parametrize(
    'record', [None, '', '/gone/iter_2.pth', b'\x00\xff\xfe\x89PNG garbage',
               b'iter_9.pth\x00\x00\x00'])
def test_without_a_usable_record_the_newest_checkpoint_is_taken(
        tmp_path, record):
    work = str(tmp_path)
    _touch(work, 'iter_9.pth', 'iter_10.pth', 'epoch_50.pth', 'best_x.pth',
           'notes.pth')
    if isinstance(record, bytes):  # a damaged record file
        with open(osp.join(work, 'last_checkpoint'), 'wb') as f:
            f.write(record)
    elif record is not None:
        _record(work, record)
    # numeric, not lexicographic; iterations before epochs
    assert find_resume_checkpoint(work) == osp.join(work, 'iter_10.pth')


def test_newest_epoch_checkpoint(tmp_path):
    _touch(str(tmp_path), 'epoch_2.pth', 'epoch_11.pth')
    assert newest_checkpoint(str(tmp_path)) == str(tmp_path / 'epoch_11.pth')


def test_nothing_to_resume(tmp_path):
    assert find_resume_checkpoint(str(tmp_path / 'missing')) is None
    _touch(str(tmp_path), 'model.pth', '.iter_4.pth.ab12.tmp')
    assert find_resume_checkpoint(str(tmp_path)) is None
    assert existing_checkpoints(str(tmp_path)) == []


def _cfg(work_dir, resume=False, load_from=None):
    return Config(dict(work_dir=work_dir, resume=resume, load_from=load_from))


def test_fresh_run_into_a_dir_with_checkpoints_is_refused(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_2.pth', 'iter_4.pth', 'best_acc.pth')
    _record(work, osp.join(work, 'iter_4.pth'))
    with pytest.raises(FileExistsError) as info:
        prepare_work_dir(_cfg(work))
    assert str(info.value) == (
        f'The work dir {work} already holds checkpoints of an earlier run '
        '(best_acc.pth, iter_2.pth, iter_4.pth, last_checkpoint), which this '
        f'run would overwrite. Pass --resume to continue from {work}/'
        'iter_4.pth; pass --overwrite to replace them and start from '
        'iteration 0 (--cfg-options overwrite_work_dir=True under another '
        'tool); or choose another --work-dir.')
    # load_from (fine-tuning) would overwrite them too
    with pytest.raises(FileExistsError):
        prepare_work_dir(_cfg(work, load_from='pretrained.pth'))


def test_overwrite_only_plans_the_replacement(tmp_path):
    """prepare_work_dir touches nothing: it lists what to replace."""
    work = str(tmp_path)
    _touch(work, 'iter_2.pth', 'last_checkpoint', 'config.py')
    before = {n: open(osp.join(work, n), 'rb').read()
              for n in os.listdir(work)}
    plan = prepare_work_dir(_cfg(work), overwrite=True)
    assert plan == WorkDirPlan([], ['iter_2.pth', 'last_checkpoint'])
    assert {n: open(osp.join(work, n), 'rb').read()
            for n in os.listdir(work)} == before


def test_move_aside_restore_and_discard(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_2.pth', 'best_acc.pth', 'last_checkpoint', 'x.log')
    data = {n: open(osp.join(work, n), 'rb').read() for n in os.listdir(work)}
    folder = move_aside(work, ['best_acc.pth', 'iter_2.pth',
                               'last_checkpoint'], '20261125_101010')
    assert folder == osp.join(work, 'overwritten_20261125_101010')
    assert sorted(os.listdir(work)) == ['overwritten_20261125_101010',
                                        'x.log']
    assert existing_checkpoints(work) == []
    # a second --overwrite run of the same second must not mix folders
    with pytest.raises(FileExistsError):
        move_aside(work, [], '20261125_101010')
    assert restore_moved(work, folder) == ['best_acc.pth', 'iter_2.pth',
                                           'last_checkpoint']
    assert {n: open(osp.join(work, n), 'rb').read()
            for n in os.listdir(work)} == data
    folder = move_aside(work, ['iter_2.pth'], 'b')
    _touch(work, 'iter_2.pth')  # the new run's file of the same name
    with pytest.raises(FileExistsError, match='holds new files of the same '
                       r"names \(\['iter_2.pth'\]\)"):
        restore_moved(work, folder)
    assert os.listdir(folder) == ['iter_2.pth']  # nothing was moved
    discard_moved(folder)
    assert not osp.exists(folder)


def test_a_leftover_moved_aside_folder_is_reported(tmp_path):
    work = str(tmp_path)
    _touch(osp.join(work, 'overwritten_20261125_101010'), 'iter_2.pth')
    plan = prepare_work_dir(_cfg(work))
    assert plan.notes == [
        f'{work}/overwritten_20261125_101010 holds checkpoints of an earlier '
        'run that an interrupted --overwrite run moved aside; move them back '
        'or delete the folder.'
    ]


def test_truncated_checkpoints_are_not_resumed_from(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_2.pth', 'iter_4.pth', 'iter_6.pth')
    assert is_complete_checkpoint(osp.join(work, 'iter_6.pth'))
    _truncate(osp.join(work, 'iter_6.pth'))
    _truncate(osp.join(work, 'iter_4.pth'), keep=0.99)
    assert not is_complete_checkpoint(osp.join(work, 'iter_6.pth'))
    assert not is_complete_checkpoint(osp.join(work, 'iter_4.pth'))
    with pytest.raises(Exception):  # what resuming from it would do
        torch.load(osp.join(work, 'iter_4.pth'))
    assert newest_checkpoint(work) == osp.join(work, 'iter_2.pth')
    # a record naming a truncated file is not followed
    _record(work, osp.join(work, 'iter_6.pth'))
    assert find_resume_checkpoint(work) == osp.join(work, 'iter_2.pth')


def test_resume_and_overwrite_exclude_each_other(tmp_path):
    with pytest.raises(
            ValueError,
            match='--resume continues the run in the work dir and '
            '--overwrite replaces its checkpoints; pass only one of them.'):
        prepare_work_dir(_cfg(str(tmp_path), resume=True), overwrite=True)


def test_resume_with_nothing_to_resume_starts_from_zero(tmp_path):
    cfg = _cfg(str(tmp_path), resume=True)
    assert prepare_work_dir(cfg).notes == [
        f'--resume: no checkpoint found in {tmp_path}, starting from '
        'iteration 0.'
    ]
    assert cfg.resume is False and cfg.load_from is None


def test_resume_sets_load_from(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_8.pth')
    cfg = _cfg(work, resume=True)
    assert prepare_work_dir(cfg).notes == [
        f'--resume: resuming from {work}/iter_8.pth.']
    assert cfg.resume is True and cfg.load_from == osp.join(work, 'iter_8.pth')
    # an explicit checkpoint is left alone
    cfg = _cfg(work, resume=True, load_from='other.pth')
    assert prepare_work_dir(cfg) == WorkDirPlan()
    assert cfg.load_from == 'other.pth'


# ------------------------------------------------ preempted.json (requeue)
def test_preemption_marker_round_trip(tmp_path):
    work = str(tmp_path)
    assert read_preemption_marker(work) is None
    path = write_preemption_marker(work, f'{work}/iter_4.pth', 4, 'SIGUSR1')
    assert path == osp.join(work, PREEMPTION_MARKER)
    assert read_preemption_marker(work) == dict(
        checkpoint=f'{work}/iter_4.pth', iter=4, signal='SIGUSR1')
    assert os.listdir(work) == [PREEMPTION_MARKER]  # no temp file left
    with open(path, 'w') as f:
        f.write('{not json')
    assert read_preemption_marker(work) == {}  # damaged: still a marker
    assert remove_preemption_marker(work)
    assert not remove_preemption_marker(work)
    assert read_preemption_marker(work) is None


def test_the_same_command_resumes_a_preempted_run(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_5.pth', 'iter_7.pth')
    _record(work, osp.join(work, 'iter_7.pth'))
    write_preemption_marker(work, osp.join(work, 'iter_7.pth'), 7, 'SIGTERM')
    cfg = _cfg(work)  # no --resume
    plan = prepare_work_dir(cfg)
    assert plan == WorkDirPlan([
        f'Resuming the run stopped by SIGTERM at iteration 7 from {work}/'
        f'iter_7.pth ({PREEMPTION_MARKER} in the work dir; --overwrite '
        'starts from iteration 0 instead).'
    ])
    assert cfg.resume is True
    assert cfg.load_from == osp.join(work, 'iter_7.pth')
    # a damaged marker still resumes, from the newest complete checkpoint
    with open(osp.join(work, PREEMPTION_MARKER), 'w') as f:
        f.write('')
    cfg = _cfg(work)
    assert prepare_work_dir(cfg).notes == [
        f'Resuming the run stopped from {work}/iter_7.pth '
        f'({PREEMPTION_MARKER} in the work dir; --overwrite starts from '
        'iteration 0 instead).'
    ]


def test_overwrite_replaces_a_preempted_run_with_its_marker(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_4.pth')
    write_preemption_marker(work, osp.join(work, 'iter_4.pth'), 4, 'SIGUSR1')
    cfg = _cfg(work)
    plan = prepare_work_dir(cfg, overwrite=True)
    assert plan.replace == ['iter_4.pth', PREEMPTION_MARKER]
    assert cfg.resume is False and cfg.load_from is None
    # and moving aside takes the marker too: the new run does not resume
    move_aside(work, plan.replace, 'new')
    assert read_preemption_marker(work) is None


def test_the_requeued_slurm_job_resumes_despite_overwrite(
        tmp_path, monkeypatch):
    """Its command line is the first job's: --overwrite included."""
    work = str(tmp_path)
    _touch(work, 'iter_4.pth')
    write_preemption_marker(work, osp.join(work, 'iter_4.pth'), 4, 'SIGUSR1',
                            slurm_job_id='42')
    monkeypatch.setenv('SLURM_JOB_ID', '42')
    cfg = _cfg(work)
    assert prepare_work_dir(cfg, overwrite=True).replace == []
    assert cfg.resume is True
    assert cfg.load_from == osp.join(work, 'iter_4.pth')
    monkeypatch.setenv('SLURM_JOB_ID', '43')  # another job: overwrites
    cfg = _cfg(work)
    assert prepare_work_dir(cfg, overwrite=True).replace == [
        'iter_4.pth', PREEMPTION_MARKER]
    assert cfg.resume is False


def test_a_marker_without_checkpoints_is_no_resume(tmp_path):
    work = str(tmp_path)
    write_preemption_marker(work, osp.join(work, 'iter_4.pth'), 4, 'SIGUSR1')
    cfg = _cfg(work)
    assert prepare_work_dir(cfg) == WorkDirPlan()
    assert cfg.resume is False


def test_a_finished_run_without_marker_is_still_refused(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_12.pth')
    with pytest.raises(FileExistsError):
        prepare_work_dir(_cfg(work))
