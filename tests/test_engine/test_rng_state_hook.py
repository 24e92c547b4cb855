"""RNGStateHook: states of every rank saved, each rank restores its own at
the point the original run had reached."""
import os.path as osp
import random
from types import SimpleNamespace

import numpy as np
import torch
from mmengine.config import Config
from mmengine.hooks import CheckpointHook
from mmengine.runner import Runner

from pmsn_mm.engine.hooks import RNGStateHook
from pmsn_mm.engine.hooks.rng_state_hook import CHECKPOINT_KEY, _checkpoint_due
from tests._configs import TINY_CLASSIFIER, TINY_PMSN, write_config


class _Log:
    """Records what a hook logs."""

    def __init__(self):
        self.lines = []

    def info(self, msg):
        self.lines.append(('info', msg))

    def warning(self, msg):
        self.lines.append(('warning', msg))


def _fetches():
    """A dataloader iterator whose every fetch draws random numbers."""
    while True:
        yield torch.rand(4)


def _runner(cur_iter: int, loop=None) -> SimpleNamespace:
    loop = loop or SimpleNamespace(dataloader_iterator=_fetches())
    return SimpleNamespace(iter=cur_iter, logger=_Log(), train_loop=loop)


def _saved_checkpoint(hook, runner) -> dict:
    checkpoint = dict(meta=dict(iter=runner.iter + 1))
    hook.before_save_checkpoint(runner, checkpoint)
    return checkpoint


# --------------------------------------------------------------- unit tests
def test_restores_right_before_the_first_new_fetch():
    torch.manual_seed(0)
    saver = RNGStateHook()
    checkpoint = _saved_checkpoint(saver, _runner(2))
    expected = [next(_fetches()) for _ in range(2)]  # the original run's

    torch.manual_seed(123)  # the resumed process starts elsewhere
    runner = _runner(3)
    loop = runner.train_loop
    original_iterator = loop.dataloader_iterator
    hook = RNGStateHook()
    hook.after_load_checkpoint(runner, checkpoint)
    hook.before_train(runner)
    assert ('info', 'RNGStateHook: restoring the random states of 1 '
            'process(es) saved at iteration 3.') in runner.logger.lines
    skipped = [next(loop.dataloader_iterator) for _ in range(3)]
    first_new = next(loop.dataloader_iterator)
    assert torch.equal(first_new, expected[0])
    assert not any(torch.equal(s, expected[0]) for s in skipped)
    hook.before_train_iter(runner, 3)
    assert loop.dataloader_iterator is original_iterator
    assert torch.equal(next(loop.dataloader_iterator), expected[1])


def test_epoch_loop_restores_at_the_first_epoch():
    torch.manual_seed(0)
    checkpoint = _saved_checkpoint(RNGStateHook(), _runner(7))
    expected = torch.rand(3)
    torch.manual_seed(5)
    runner = _runner(8, loop=SimpleNamespace())  # no dataloader_iterator
    hook = RNGStateHook()
    hook.after_load_checkpoint(runner, checkpoint)
    hook.before_train(runner)
    torch.rand(3)
    hook.before_train_epoch(runner)
    assert torch.equal(torch.rand(3), expected)
    # only once
    hook.before_train_epoch(runner)
    assert not torch.equal(torch.rand(3), expected)


def test_load_from_without_resume_restores_nothing():
    torch.manual_seed(0)
    checkpoint = _saved_checkpoint(RNGStateHook(), _runner(3))
    runner = _runner(0)  # load_from leaves the iteration at 0
    loop = runner.train_loop
    iterator = loop.dataloader_iterator
    hook = RNGStateHook()
    hook.after_load_checkpoint(runner, checkpoint)
    hook.before_train(runner)
    assert loop.dataloader_iterator is iterator
    assert runner.logger.lines == []


def test_checkpoint_without_states_warns():
    runner = _runner(4)
    hook = RNGStateHook()
    hook.after_load_checkpoint(runner, dict(meta=dict(iter=4)))
    hook.before_train(runner)
    assert runner.logger.lines == [(
        'warning', 'RNGStateHook: the checkpoint holds no random states '
        '(saved without RNGStateHook); the resumed run draws different '
        'random numbers than the original run would have.')]


def test_other_world_size_warns_and_restores_nothing():
    checkpoint = _saved_checkpoint(RNGStateHook(), _runner(3))
    checkpoint[CHECKPOINT_KEY] *= 2  # as if saved by 2 ranks
    runner = _runner(4)
    iterator = runner.train_loop.dataloader_iterator
    hook = RNGStateHook()
    hook.after_load_checkpoint(runner, checkpoint)
    hook.before_train(runner)
    assert runner.train_loop.dataloader_iterator is iterator
    assert runner.logger.lines == [(
        'warning', 'RNGStateHook: the checkpoint holds the random states of 2 '
        'process(es) but this run has 1; they are not restored, so the '
        'resumed run draws different random numbers than the original run '
        'would have.')]


def test_validation_does_not_consume_the_training_stream():
    hook = RNGStateHook()
    runner = _runner(5)
    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    expected = (torch.rand(4), np.random.rand(), random.random())
    torch.manual_seed(0), np.random.seed(0), random.seed(0)
    hook.before_val(runner)
    torch.rand(7), np.random.rand(3), random.random()  # validation draws
    # a save_best checkpoint inside validation gets the pre-validation states
    checkpoint = _saved_checkpoint(hook, runner)
    hook.after_val(runner)
    assert torch.equal(torch.rand(4), expected[0])
    assert np.random.rand() == expected[1] and random.random() == expected[2]

    torch.manual_seed(9)
    resumed = _runner(6)
    hook = RNGStateHook()
    hook.after_load_checkpoint(resumed, checkpoint)
    hook.before_train(resumed)
    for _ in range(6):
        next(resumed.train_loop.dataloader_iterator)
    assert torch.equal(next(resumed.train_loop.dataloader_iterator),
                       expected[0])


# ------------------------------------------------------ through a Runner
def _run(cfg_path, work_dir, name, max_iters=None, resume_from=None,
         rng_hook=True):
    cfg = Config.fromfile(cfg_path)
    cfg.work_dir = work_dir
    cfg.experiment_name = name
    if max_iters is not None:
        cfg.train_cfg.max_iters = max_iters
    if resume_from is not None:
        cfg.resume = True
        cfg.load_from = resume_from
    if not rng_hook:
        del cfg.default_hooks['rng_state']
    Runner.from_cfg(cfg).train()


def _state(path):
    return torch.load(path)['state_dict']


def test_without_the_hook_a_resume_is_not_exact(tmp_path):
    """The control for the kill/resume test: the masks and views differ."""
    cfg = write_config(tmp_path, TINY_PMSN)
    full, resumed = str(tmp_path / 'full'), str(tmp_path / 'resumed')
    _run(cfg, full, 'ctl-full', max_iters=4)
    _run(cfg, resumed, 'ctl-resumed', max_iters=4,
         resume_from=osp.join(full, 'iter_2.pth'), rng_hook=False)
    a, b = _state(osp.join(full, 'iter_4.pth')), _state(
        osp.join(resumed, 'iter_4.pth'))
    assert not all(torch.equal(a[k], b[k]) for k in a)


EPOCH_CLASSIFIER = """
_base_ = './tiny.py'
train_dataloader = dict(
    batch_size=8,
    dataset=dict(num_samples=32, pipeline=[dict(type='RandomFlip', prob=0.5),
                                           dict(type='PackInputs')]))
val_dataloader = dict(
    batch_size=8, num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type='PowerLawOverlayDataset', split='test', num_samples=16,
                 # random, so validation draws from the global generators
                 pipeline=[dict(type='RandomFlip', prob=0.5),
                           dict(type='PackInputs')]))
val_evaluator = dict(type='Accuracy')
val_cfg = dict()
model = dict(backbone=dict(drop_path_rate=0.2))
param_scheduler = [dict(type='CosineAnnealingLR', T_max=3, by_epoch=True)]
train_cfg = dict(_delete_=True, type='EpochBasedTrainLoop', max_epochs=3,
                 val_interval=1)
default_hooks = dict(
    checkpoint=dict(type='CheckpointHook', interval=1, by_epoch=True))
log_processor = dict(by_epoch=True)
randomness = dict(seed=0, deterministic=True)
"""


def test_epoch_based_resume_with_validation_is_exact(tmp_path):
    """Validation after epoch 1 runs only in the uninterrupted run."""
    write_config(tmp_path, TINY_CLASSIFIER)
    cfg_path = write_config(tmp_path, EPOCH_CLASSIFIER, 'epoch.py')
    full, resumed = str(tmp_path / 'full'), str(tmp_path / 'resumed')
    _run(cfg_path, full, 'ep-full')
    _run(cfg_path, resumed, 'ep-resumed',
         resume_from=osp.join(full, 'epoch_1.pth'))
    a, b = _state(osp.join(full, 'epoch_3.pth')), _state(
        osp.join(resumed, 'epoch_3.pth'))
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_checkpoint_due_follows_checkpoint_hook_rules():
    hooks = [
        CheckpointHook(interval=3, by_epoch=False, save_begin=2,
                       save_last=True),
        CheckpointHook(interval=1, by_epoch=True),  # saves after epochs
    ]
    due = [
        _checkpoint_due(SimpleNamespace(iter=i, max_iters=10, hooks=hooks))
        for i in range(10)
    ]
    # mmengine's rule: iterations save_begin + 3k (1-based) and the last one
    assert [i + 1 for i, d in enumerate(due) if d] == [2, 5, 8, 10]
    assert not _checkpoint_due(SimpleNamespace(iter=4, max_iters=10))
