"""pmsn_mm.engine.resume: which checkpoint --resume takes, when a work dir
is refused, and the flags both tools map onto the config."""
import argparse
import os
import os.path as osp
import shutil

import pytest
import torch
from mmengine.config import Config

from pmsn_mm.engine.resume import (PREEMPTION_MARKER, RunPlan,
                                   add_resume_arguments, apply_resume_args,
                                   continues_checkpoint, discard_moved,
                                   existing_checkpoints,
                                   find_resume_checkpoint,
                                   is_complete_checkpoint, move_aside,
                                   newest_checkpoint, plan_run,
                                   read_preemption_marker,
                                   record_last_checkpoint,
                                   remove_preemption_marker, restore_moved,
                                   write_preemption_marker)
from pmsn_mm.utils.refusal import NothingToDo


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
        plan_run(_cfg(work))
    assert str(info.value) == (
        f'The work dir {work} already holds checkpoints of an earlier run '
        '(best_acc.pth, iter_2.pth, iter_4.pth, last_checkpoint), which this '
        f'run would overwrite. Pass --resume to continue from {work}/'
        'iter_4.pth; pass --overwrite to replace them and start from '
        'iteration 0 (--cfg-options overwrite_work_dir=True under another '
        'tool); or choose another --work-dir.')
    # load_from (fine-tuning) would overwrite them too
    with pytest.raises(FileExistsError):
        plan_run(_cfg(work, load_from='pretrained.pth'))


def test_overwrite_only_plans_the_replacement(tmp_path):
    """plan_run touches nothing: it lists what to replace."""
    work = str(tmp_path)
    _touch(work, 'iter_2.pth', 'last_checkpoint', 'config.py')
    before = {n: open(osp.join(work, n), 'rb').read()
              for n in os.listdir(work)}
    plan = plan_run(_cfg(work), overwrite=True)
    assert plan == RunPlan([], ['iter_2.pth', 'last_checkpoint'])
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
    plan = plan_run(_cfg(work))
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
        plan_run(_cfg(str(tmp_path), resume=True), overwrite=True)


def test_resume_with_nothing_to_resume_starts_from_zero(tmp_path):
    cfg = _cfg(str(tmp_path), resume=True)
    assert plan_run(cfg).notes == [
        f'--resume: no checkpoint found in {tmp_path}, starting from '
        'iteration 0.'
    ]
    assert cfg.resume is False and cfg.load_from is None


def test_resume_sets_load_from(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_8.pth')
    cfg = _cfg(work, resume=True)
    assert plan_run(cfg).notes == [
        f'--resume: resuming from {work}/iter_8.pth.']
    assert cfg.resume is True and cfg.load_from == osp.join(work, 'iter_8.pth')
    # an explicit checkpoint is left alone
    cfg = _cfg(work, resume=True, load_from='other.pth')
    assert plan_run(cfg) == RunPlan()
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
    plan = plan_run(cfg)
    assert plan == RunPlan([
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
    assert plan_run(cfg).notes == [
        f'Resuming the run stopped from {work}/iter_7.pth '
        f'({PREEMPTION_MARKER} in the work dir; --overwrite starts from '
        'iteration 0 instead).'
    ]


def test_overwrite_replaces_a_preempted_run_with_its_marker(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_4.pth')
    write_preemption_marker(work, osp.join(work, 'iter_4.pth'), 4, 'SIGUSR1')
    cfg = _cfg(work)
    plan = plan_run(cfg, overwrite=True)
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
    assert plan_run(cfg, overwrite=True).replace == []
    assert cfg.resume is True
    assert cfg.load_from == osp.join(work, 'iter_4.pth')
    monkeypatch.setenv('SLURM_JOB_ID', '43')  # another job: overwrites
    cfg = _cfg(work)
    assert plan_run(cfg, overwrite=True).replace == [
        'iter_4.pth', PREEMPTION_MARKER]
    assert cfg.resume is False


def test_a_marker_without_checkpoints_is_no_resume(tmp_path):
    work = str(tmp_path)
    write_preemption_marker(work, osp.join(work, 'iter_4.pth'), 4, 'SIGUSR1')
    cfg = _cfg(work)
    assert plan_run(cfg) == RunPlan()
    assert cfg.resume is False


def test_a_finished_run_without_marker_is_still_refused(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_12.pth')
    with pytest.raises(FileExistsError):
        plan_run(_cfg(work))


# ------------------------------------------------ a run that already finished
def _saved_at(folder, name, **meta):
    """A real checkpoint whose ``meta`` says where the run was."""
    os.makedirs(folder, exist_ok=True)
    path = osp.join(folder, name)
    torch.save(dict(meta=meta, state_dict={}), path)
    return path


def test_resuming_a_finished_run_is_nothing_to_do(tmp_path):
    work = str(tmp_path)
    _saved_at(work, 'iter_4.pth', iter=4, epoch=0)
    cfg = Config(dict(work_dir=work, resume=True, load_from=None,
                      train_cfg=dict(type='IterBasedTrainLoop', max_iters=4)))
    with pytest.raises(NothingToDo) as info:
        plan_run(cfg)
    assert str(info.value) == (
        f'Nothing to train: the run in {work} already finished: iter_4.pth '
        'is at iteration 4 of 4. To train again from iteration 0 pass '
        '--overwrite (or another --work-dir); to train longer raise the '
        'schedule (e.g. --cfg-options train_cfg.max_iters=N).')
    assert info.value.exit_code == 0
    # a longer schedule continues from it
    cfg.resume, cfg.load_from = True, None
    cfg.train_cfg.max_iters = 6
    assert plan_run(cfg).notes == [
        f'--resume: resuming from {work}/iter_4.pth.']
    assert cfg.load_from == osp.join(work, 'iter_4.pth')


def test_an_explicit_finished_checkpoint_and_epochs_are_told_too(tmp_path):
    path = _saved_at(str(tmp_path / 'old'), 'epoch_3.pth', iter=12, epoch=3)
    cfg = Config(dict(work_dir=str(tmp_path / 'new'), resume=True,
                      load_from=path,
                      train_cfg=dict(by_epoch=True, max_epochs=3)))
    with pytest.raises(NothingToDo, match='epoch_3.pth is at epoch 3 of 3'):
        plan_run(cfg)
    # load_from without resume (weights only) trains its own schedule
    cfg.resume = False
    assert plan_run(cfg) == RunPlan()


def test_continues_checkpoint():
    assert continues_checkpoint(4, 4)  # mmengine's resume set the loop
    assert not continues_checkpoint(0, 0)  # a checkpoint saved at 0
    assert not continues_checkpoint(0, 4)  # load_from: weights only
    assert not continues_checkpoint(4, None)  # no meta
    assert not continues_checkpoint(4, 2)  # another checkpoint


# ---------------------------------------------------------- the two tools
@pytest.mark.parametrize('argv, resume, overwrite', [
    ([], None, False),
    (['--resume'], 'auto', False),
    (['--resume', 'w/iter_4.pth'], 'w/iter_4.pth', False),
    (['--overwrite'], None, True),
])
def test_the_flags_of_both_tools(argv, resume, overwrite):
    parser = argparse.ArgumentParser()
    add_resume_arguments(parser)
    args = parser.parse_args(argv)
    assert (args.resume, args.overwrite) == (resume, overwrite)


def test_the_flags_only_set_config_fields():
    cfg = Config(dict(resume=False, load_from='pretrained.pth'))
    apply_resume_args(cfg, None, False)
    assert cfg.to_dict() == dict(resume=False, load_from='pretrained.pth')
    apply_resume_args(cfg, 'auto', False)
    assert cfg.to_dict() == dict(resume=True, load_from=None)
    apply_resume_args(cfg, 'w/iter_4.pth', False)
    assert cfg.to_dict() == dict(resume=True, load_from='w/iter_4.pth')
    cfg = Config(dict(resume=False, load_from=None))
    apply_resume_args(cfg, None, True)
    assert cfg.to_dict() == dict(resume=False, load_from=None,
                                 overwrite_work_dir=True)


def test_overwrite_is_read_from_the_config(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_2.pth')
    cfg = Config(dict(work_dir=work, resume=False, load_from=None,
                      overwrite_work_dir=True))
    assert plan_run(cfg).replace == ['iter_2.pth']
    cfg.overwrite_work_dir = False
    with pytest.raises(FileExistsError):
        plan_run(cfg)


def test_the_earlier_config_dump_is_read_when_planned(tmp_path):
    """The new runner rewrites it while it is built, after the plan."""
    work = str(tmp_path / 'work')
    _touch(work, 'iter_2.pth')
    with open(osp.join(work, 'probe.py'), 'wb') as f:
        f.write(b'earlier = 1\n')
    (tmp_path / 'configs').mkdir()
    (tmp_path / 'configs' / 'probe.py').write_text('new = 2\n')
    cfg = Config(dict(work_dir=work, resume=False, load_from=None),
                 filename=str(tmp_path / 'configs' / 'probe.py'))
    assert plan_run(cfg, overwrite=True) == RunPlan(
        [], ['iter_2.pth'], 'probe.py', b'earlier = 1\n')


def test_a_recorded_checkpoint_is_what_resume_takes(tmp_path):
    work = str(tmp_path)
    _touch(work, 'iter_2.pth', 'iter_4.pth')
    record_last_checkpoint(work, osp.join(work, 'iter_2.pth'))
    with open(osp.join(work, 'last_checkpoint'), 'rb') as f:
        assert f.read() == osp.join(work, 'iter_2.pth').encode('utf-8')
    assert sorted(os.listdir(work)) == [
        'iter_2.pth', 'iter_4.pth', 'last_checkpoint']  # no temporary file
    assert find_resume_checkpoint(work) == osp.join(work, 'iter_2.pth')
