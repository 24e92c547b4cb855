"""PriorWeightWarmupHook: lambda by hand, set on the loss, resumable."""
from types import SimpleNamespace

import pytest
import torch
from mmengine.logging import MessageHub
from torch import nn

from pmsn_mm.engine.hooks import PriorWeightWarmupHook
from pmsn_mm.models.heads import PMSNHead


class _Model(nn.Module):

    def __init__(self, prior_weight: float) -> None:
        super().__init__()
        self.head = PMSNHead(
            num_prototypes=3,
            in_channels=4,
            loss=dict(type='PMSNLoss', prior_weight=prior_weight))


def _runner(max_iters=9, prior_weight=100.0):
    return SimpleNamespace(
        model=_Model(prior_weight), iter=0, max_iters=max_iters,
        message_hub=MessageHub.get_instance('prior_weight_warmup_test'))


def _weights(hook, runner, iters):
    out = []
    for it in iters:
        runner.iter = it
        hook.before_train_iter(runner, it)
        out.append(runner.model.head.loss_module.prior_weight)
    return out


def test_linear_schedule_by_hand():
    runner = _runner(max_iters=9)
    hook = PriorWeightWarmupHook(warmup_ratio=1 / 3)  # 3 iterations
    hook.before_train(runner)
    assert hook.warmup_iters == 3
    assert _weights(hook, runner, range(6)) == pytest.approx(
        [0, 100 / 3, 200 / 3, 100, 100, 100])
    assert runner.message_hub.get_scalar(
        'train/prior_weight').current() == 100
    hook = PriorWeightWarmupHook(warmup_iters=4, start_weight=20.0)
    runner = _runner(prior_weight=60.0)
    hook.before_train(runner)
    assert _weights(hook, runner, [0, 1, 2, 4, 8]) == pytest.approx(
        [20, 30, 40, 60, 60])


def test_resume_continues_the_schedule():
    """A fresh hook and a fresh model (as after --resume, built from the
    config) give the same weight at every iteration as the run that went on.
    """
    straight = PriorWeightWarmupHook(warmup_iters=5)
    runner = _runner()
    straight.before_train(runner)
    expected = _weights(straight, runner, range(8))
    resumed = PriorWeightWarmupHook(warmup_iters=5)
    runner = _runner()
    resumed.before_train(runner)
    assert _weights(resumed, runner, range(3, 8)) == expected[3:]


def test_the_loss_uses_the_weight():
    runner = _runner(max_iters=4)
    hook = PriorWeightWarmupHook(warmup_iters=2)
    hook.before_train(runner)
    runner.iter = 1
    hook.before_train_iter(runner, 1)
    head = runner.model.head
    out = head.loss(torch.randn(6, 4), torch.randn(3, 4))
    torch.testing.assert_close(out['loss_prior'], 50.0 * out['prior_kl'])


@pytest.mark.parametrize('kwargs, match', [
    (dict(), 'exactly one of warmup_iters and warmup_ratio'),
    (dict(warmup_iters=3, warmup_ratio=0.5), 'exactly one of'),
    (dict(warmup_iters=0), r'warmup_iters must be an int >= 1'),
    (dict(warmup_ratio=1.5), r'warmup_ratio must be in \(0, 1\]'),
    (dict(warmup_iters=2, start_weight=-1), r'start_weight must be in '
     r'\[0, inf\)'),
])
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PriorWeightWarmupHook(**kwargs)


def test_model_without_prior_weight_is_refused():
    runner = _runner()
    runner.model = nn.Linear(2, 2)
    with pytest.raises(AttributeError, match='needs a model whose '
                       'head.loss_module has prior_weight'):
        PriorWeightWarmupHook(warmup_iters=2).before_train(runner)
