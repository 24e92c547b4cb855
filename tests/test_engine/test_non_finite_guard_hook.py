"""NonFiniteGuardHook: a diverging run stops at once, nothing NaN is saved."""
import glob
import importlib.util
import math
import os.path as osp
import re
from types import SimpleNamespace

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.logging import MessageHub
from mmengine.model import BaseModel
from mmengine.optim import OptimWrapper, OptimWrapperDict
from mmengine.runner import Runner
from mmpretrain.registry import HOOKS
from torch import nn

from pmsn_mm.engine.hooks import NonFiniteGuardHook, NonFiniteTrainingError
from pmsn_mm.engine.hooks.non_finite_guard_hook import (SKIPS_KEY,
                                                        _grads_finite,
                                                        _optimizers)
from tests._configs import REPO, TINY_PMSN, write_config

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


def _load_train_tool():
    spec = importlib.util.spec_from_file_location(
        'tool_train_guard', osp.join(REPO, 'tools', 'train.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train = _load_train_tool()


def _all_finite(path: str) -> bool:
    state = torch.load(path)['state_dict']
    return all(torch.isfinite(v).all() for v in state.values()
               if v.is_floating_point())


# ------------------------------------------------------------ settings
@pytest.mark.parametrize('kwargs, message', [
    (dict(action='halt'), "NonFiniteGuardHook action must be one of "
     r"\('stop', 'skip'\) but is 'halt'\."),
    (dict(max_skips=-1), 'NonFiniteGuardHook max_skips must be an int >= 0 '
     'but is -1.'),
    (dict(max_skips=True), 'NonFiniteGuardHook max_skips must be an int >= '
     '0 but is True.'),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NonFiniteGuardHook(**kwargs)


# ------------------------------------------------ through tools/train.py
DIVERGING = [
    'optim_wrapper.optimizer.type=SGD', 'optim_wrapper.optimizer.lr=1e4',
    'optim_wrapper.optimizer.weight_decay=0',
    'default_hooks.checkpoint.interval=1'
]


@HOOKS.register_module()
class _RecordFiniteness(Hook):
    """Per iteration: were the loss terms and the gradients finite?

    Its optimizer step pre-hook is registered before the guard's (priority
    VERY_HIGH runs ``before_train`` first), so it sees the gradients before
    the guard drops them. Records go to the module-level ``FINITENESS``.
    """

    priority = 'VERY_HIGH'

    def before_train(self, runner) -> None:
        FINITENESS.clear()
        for optimizer in _optimizers(runner.optim_wrapper):
            optimizer.register_step_pre_hook(self._grads)

    def _grads(self, optimizer, args, kwargs) -> None:
        self._grads_ok = _grads_finite(optimizer)

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self._grads_ok = True  # no step taken: nothing non-finite to see

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None) -> None:
        bad_terms = sorted(
            key for key, value in (outputs or {}).items()
            if 'loss' in key and not torch.isfinite(
                torch.as_tensor(value)).all())
        FINITENESS.append(dict(iteration=runner.iter + 1,
                               bad_terms=bad_terms, grads_ok=self._grads_ok))


FINITENESS: list = []


def test_diverging_lr_stops_with_the_iteration_terms_and_last_checkpoint(
        tmp_path):
    """The guard's promise, whichever non-finite value a CPU produces first
    (a loss term, or gradients of a finite loss): training stops at the
    first iteration with either, the message names that iteration and what
    was non-finite, and the newest (finite) checkpoint, which is the one of
    the iteration before."""
    cfg = write_config(
        tmp_path,
        TINY_PMSN + "custom_hooks = [dict(type='_RecordFiniteness')]\n")
    work_dir = str(tmp_path / 'work')
    with pytest.raises(NonFiniteTrainingError) as info:
        train.main([
            cfg, '--work-dir', work_dir, '--cfg-options', *DIVERGING,
            'experiment_name=diverge'
        ])
    message = str(info.value)
    # the recorder saw every iteration up to the one the guard stopped at
    first_bad = next(r for r in FINITENESS
                     if r['bad_terms'] or not r['grads_ok'])
    assert FINITENESS[-1] is first_bad, FINITENESS
    stop = first_bad['iteration']
    assert stop >= 2, 'the run should have saved finite checkpoints first'
    if first_bad['bad_terms']:
        terms = re.search(r'non-finite loss \((.*?)\) at', message)
        assert terms, message
        named = sorted(t.split('=')[0] for t in terms.group(1).split(', '))
        assert named == first_bad['bad_terms']
    else:
        assert 'non-finite gradients (the loss was finite)' in message
    saved = sorted(glob.glob(osp.join(work_dir, 'iter_*.pth')))
    last = max(int(osp.basename(p)[5:-4]) for p in saved)
    assert last == stop - 1  # checkpoint interval 1: every good iteration
    assert message.startswith('Training stopped by NonFiniteGuardHook: ')
    assert (f'at iteration {stop}/6. Nothing from this iteration was saved; '
            f'the last good checkpoint is {work_dir}/iter_{last}.pth.'
            ) in message
    assert all(_all_finite(p) for p in saved)
    # the message also goes to the run's log file
    log = glob.glob(osp.join(work_dir, '*', '*.log'))[0]
    with open(log) as f:
        assert 'Training stopped by NonFiniteGuardHook' in f.read()


def test_without_the_guard_the_same_run_saves_nan(tmp_path):
    """The control: the diverging run exits normally with NaN weights."""
    cfg = Config.fromfile(write_config(tmp_path, TINY_PMSN))
    cfg.merge_from_dict({
        'optim_wrapper.optimizer.type': 'SGD',
        'optim_wrapper.optimizer.lr': 1e4,
        'optim_wrapper.optimizer.weight_decay': 0
    })
    cfg.work_dir = str(tmp_path / 'work')
    cfg.experiment_name = 'no-guard'
    del cfg.default_hooks['non_finite_guard']
    Runner.from_cfg(cfg).train()
    assert not _all_finite(osp.join(cfg.work_dir, 'iter_6.pth'))


def test_zero_std_stops_at_the_first_iteration(tmp_path):
    cfg = write_config(tmp_path, TINY_PMSN)
    with pytest.raises(
            NonFiniteTrainingError,
            match=r'non-finite loss \(loss=nan, .*\) at iteration 1/6\. '
            r'Nothing from this iteration was saved; no checkpoint was saved '
            r'before\.'):
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--cfg-options',
            'model.data_preprocessor.std=[0.0]', 'experiment_name=std0'
        ])
    assert not glob.glob(str(tmp_path / 'work' / '*.pth'))


# ------------------------------------------------------ skip, gradients
class _Toy(BaseModel):
    """Linear regression whose loss is NaN (or whose gradient is inf) on
    chosen calls."""

    def __init__(self, nan_calls=(), inf_grad_calls=()):
        super().__init__()
        self.linear = nn.Linear(2, 1)
        self.nan_calls = set(nan_calls)
        self.inf_grad_calls = set(inf_grad_calls)
        self.calls = 0

    def forward(self, inputs, data_samples=None, mode='loss'):
        self.calls += 1
        loss = self.linear(inputs).pow(2).mean()
        if self.calls in self.nan_calls:
            loss = loss * math.nan
        if self.calls in self.inf_grad_calls:
            w = self.linear.weight
            # finite value (0) with an infinite gradient
            loss = loss + torch.sqrt(w - w.detach()).sum()
        return dict(loss=loss)


class _Record(Hook):
    """Weights and optimizer step count after every iteration."""

    priority = 'LOWEST'

    def __init__(self):
        self.weights, self.steps = [], []

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        self.weights.append(runner.model.linear.weight.detach().clone())
        state = runner.optim_wrapper.optimizer.state
        self.steps.append(
            int(state[runner.model.linear.weight]['step']) if state else 0)


def _toy_runner(tmp_path, model, guard, name, max_iters=6):
    data = [dict(inputs=torch.ones(2)) for _ in range(4)]
    record = _Record()
    runner = Runner(
        model=model,
        work_dir=str(tmp_path / name),
        experiment_name=name,
        train_dataloader=dict(
            dataset=data,
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=2,
            collate_fn=dict(type='default_collate')),
        optim_wrapper=dict(optimizer=dict(type='AdamW', lr=0.1)),
        train_cfg=dict(by_epoch=False, max_iters=max_iters),
        default_hooks=dict(
            checkpoint=dict(type='CheckpointHook', interval=100,
                            by_epoch=False)),
        custom_hooks=[guard])
    runner.register_hook(record)
    return runner, record


def test_skip_mode_drops_the_step_and_counts(tmp_path):
    guard = NonFiniteGuardHook(action='skip', max_skips=2)
    runner, record = _toy_runner(tmp_path, _Toy(nan_calls=(2, 4)), guard,
                                 'skip')
    warnings = []
    runner.logger.warning = warnings.append
    runner.train()
    assert [w for w in warnings if 'NonFiniteGuardHook' in w] == [
        'NonFiniteGuardHook: non-finite loss (loss=nan) at iteration 2/6; '
        'the optimizer step was skipped (1 of max_skips=2).',
        'NonFiniteGuardHook: non-finite loss (loss=nan) at iteration 4/6; '
        'the optimizer step was skipped (2 of max_skips=2).'
    ]
    # iterations 2 and 4 changed neither the weights nor the optimizer
    assert torch.equal(record.weights[1], record.weights[0])
    assert torch.equal(record.weights[3], record.weights[2])
    assert not torch.equal(record.weights[2], record.weights[1])
    assert record.steps == [1, 1, 2, 2, 3, 4]
    assert runner.message_hub.get_info(SKIPS_KEY) == 2
    assert torch.isfinite(runner.model.linear.weight).all()


def test_skip_mode_stops_after_max_skips(tmp_path):
    guard = NonFiniteGuardHook(action='skip', max_skips=2)
    runner, _ = _toy_runner(tmp_path, _Toy(nan_calls=(1, 3, 5)), guard,
                            'skip-max')
    with pytest.raises(
            NonFiniteTrainingError,
            match=r'non-finite loss \(loss=nan\), 3 bad iterations in this '
            r'run \(max_skips=2\) at iteration 5/6\.'):
        runner.train()


def test_non_finite_gradient_with_finite_loss_is_caught(tmp_path):
    runner, record = _toy_runner(tmp_path, _Toy(inf_grad_calls=(3, )),
                                 NonFiniteGuardHook(), 'grad')
    with pytest.raises(
            NonFiniteTrainingError,
            match=r'non-finite gradients \(the loss was finite\) at '
            r'iteration 3/6\.'):
        runner.train()
    # action='stop' reads the gradient flag after the iteration (no host
    # sync before the optimizer step), so the bad step was applied in
    # memory; the run stopped before anything of it was saved
    # (action='skip' refuses the step: test_skip_mode_drops_the_step_...)
    assert torch.isfinite(record.weights[1]).all()


def test_non_finite_weights_are_never_saved():
    hub = MessageHub('guard-save-test')
    runner = SimpleNamespace(
        iter=6, max_iters=10, message_hub=hub,
        logger=SimpleNamespace(error=lambda msg: None))
    guard = NonFiniteGuardHook()
    hub.update_info('last_ckpt', 'work/iter_5.pth')
    guard.before_save_checkpoint(
        runner, dict(state_dict=dict(w=torch.ones(2))))
    hub.update_info('last_ckpt', 'work/iter_7.pth')
    with pytest.raises(
            NonFiniteTrainingError,
            match=r'2 non-finite tensors in the weights at iteration 7/10 '
            r'\(a, c\); the checkpoint was not written\. Nothing from this '
            r'iteration was saved; the last good checkpoint is '
            r'work/iter_5\.pth\.'):
        guard.before_save_checkpoint(
            runner,
            dict(state_dict=dict(
                a=torch.tensor([1.0, math.inf]),
                b=torch.zeros(2),
                c=torch.tensor([math.nan]),
                step=torch.tensor(3))))


def test_gradient_check_is_exact_for_huge_finite_gradients():
    param = nn.Parameter(torch.zeros(100))
    optimizer = torch.optim.SGD([param, nn.Parameter(torch.zeros(1))], lr=1)
    param.grad = torch.full((100, ), 1e30)  # its L2 norm overflows float32
    assert not torch.isfinite(torch.nn.utils.get_total_norm([param.grad]))
    assert _grads_finite(optimizer)
    param.grad[7] = math.nan
    assert not _grads_finite(optimizer)


def test_every_optimizer_of_an_optim_wrapper_dict_is_guarded():
    a, b = nn.Linear(2, 1), nn.Linear(2, 1)
    wrappers = OptimWrapperDict(
        a=OptimWrapper(torch.optim.SGD(a.parameters(), lr=1)),
        b=OptimWrapper(torch.optim.SGD(b.parameters(), lr=1)))
    assert _optimizers(wrappers) == [
        wrappers['a'].optimizer, wrappers['b'].optimizer
    ]


def test_bad_action_through_train_py(tmp_path):
    cfg = write_config(tmp_path, TINY_PMSN)
    with pytest.raises(ValueError,
                       match="NonFiniteGuardHook action must be one of "
                       r"\('stop', 'skip'\) but is 'halt'\."):
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--cfg-options',
            'default_hooks.non_finite_guard.action=halt',
            'experiment_name=guard-action'
        ])


@pytest.mark.parametrize('action, reads', [('stop', 1), ('skip', 2)])
def test_one_device_read_per_step_with_stop(action, reads):
    """'stop' keeps the gradient flag on the device and reads it with the
    loss flags after the iteration: one host sync per step; 'skip' must
    read the gradient flag before the step (one more)."""
    from tests._profiling.op_counter import OpCounter, assert_host_syncs
    model = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    runner = SimpleNamespace(
        optim_wrapper=OptimWrapper(optimizer), iter=0, max_iters=4,
        message_hub=MessageHub('guard-read-test'),
        logger=SimpleNamespace(error=lambda msg: None,
                               warning=lambda msg: None))
    guard = NonFiniteGuardHook(action=action)
    guard.before_train(runner)
    loss = model(torch.randn(4, 3)).square().mean()
    loss.backward()
    outputs = dict(loss=loss.detach(), loss_a=loss.detach() / 2,
                   stat=torch.ones(()))
    with OpCounter() as counter:
        optimizer.step()
        guard.after_train_iter(runner, 0, outputs=outputs)
    # the rule's allowed read(s): the guard's flags, once per step (and the
    # gradient flag before the step with 'skip')
    assert_host_syncs(counter, reads, what=f"the guard, action='{action}'",
                      exact=True)
    guard.after_train(runner)
