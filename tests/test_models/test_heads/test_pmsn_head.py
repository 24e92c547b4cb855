import math

import pytest
import torch
from mmengine.optim import DefaultOptimWrapperConstructor
from mmpretrain.registry import MODELS
from mmengine.runner.checkpoint import load_state_dict
from torch import nn

from pmsn_mm.models.heads import PMSNHead
from pmsn_mm.models.losses import PMSNLoss


def test_prototype_init_and_init_weights_keeps_it():
    torch.manual_seed(0)
    head = MODELS.build(
        dict(type='PMSNHead', num_prototypes=50, in_channels=16))
    assert isinstance(head.prototypes, nn.Parameter)
    assert head.prototypes.shape == (50, 16)
    bound = math.sqrt(1 / 16)
    assert head.prototypes.abs().max() <= bound
    assert head.prototypes.abs().max() > 0.8 * bound  # uniform, not tiny
    before = head.prototypes.detach().clone()
    head.init_weights()
    assert torch.equal(head.prototypes.detach(), before)
    torch.manual_seed(0)
    again = PMSNHead(num_prototypes=50, in_channels=16)
    assert torch.equal(again.prototypes.detach(), before)


def test_default_loss_and_config():
    head = PMSNHead(num_prototypes=4, in_channels=8)
    assert isinstance(head.loss_module, PMSNLoss)
    head = PMSNHead(
        num_prototypes=4,
        in_channels=8,
        prior=dict(type='PowerLawPrior', tau=0.5))
    assert head.prior.tau == 0.5
    built = PMSNLoss()
    assert PMSNHead(4, 8, loss=built).loss_module is built


def test_loss_uses_prototype_parameter():
    head = PMSNHead(num_prototypes=6, in_channels=8)
    anchors, targets = torch.randn(8, 8), torch.randn(4, 8)
    expected = head.loss_module(head.log_probabilities(anchors),
                                head.probabilities(targets).detach(),
                                head.prior)
    out = head.loss(anchors, targets)
    for key in expected:
        torch.testing.assert_close(out[key], expected[key])
    assert out['loss_ce'].grad_fn is not None


def test_probabilities_and_prior_by_hand():
    head = PMSNHead(num_prototypes=3, in_channels=2, temperature=0.5,
                    label_smoothing=0.3,
                    prior=dict(type='PowerLawPrior', tau=1.0))
    with torch.no_grad():
        head.prototypes.copy_(torch.tensor([[2.0, 0.0], [0.0, 1.0],
                                            [-1.0, 0.0]]))
    z = torch.tensor([[3.0, 4.0]])  # cosines 0.6, 0.8, -0.6
    e = [math.exp(c / 0.5) for c in (0.6, 0.8, -0.6)]
    expected = [0.7 * x / sum(e) + 0.3 / 3 for x in e]
    torch.testing.assert_close(head.probabilities(z),
                               torch.tensor([expected]))
    torch.testing.assert_close(head.log_probabilities(z),
                               torch.tensor([expected]).log())
    torch.testing.assert_close(
        head.prior_probs(dtype=torch.float64),
        torch.tensor([6 / 11, 3 / 11, 2 / 11], dtype=torch.float64))
    assert head.prior_probs().dtype == torch.float32
    # fixed priors are computed once per (device, dtype)
    assert head.prior_probs() is head.prior_probs()


def test_checkpoint_with_the_prior_in_the_loss_still_loads():
    new = PMSNHead(num_prototypes=5, in_channels=4,
                   prior=dict(type='AdaptivePowerLawPrior', num_prototypes=5))
    new.prior.tau.fill_(0.7)
    new.prior.num_updates.fill_(12)
    # the layout before the head owned the prior
    old = {k.replace('prior.', 'loss_module.prior.', 1)
           if k.startswith('prior.') else k: v.clone()
           for k, v in new.state_dict().items()}
    assert 'loss_module.prior.tau' in old and 'prior.tau' not in old
    fresh = PMSNHead(num_prototypes=5, in_channels=4,
                     prior=dict(type='AdaptivePowerLawPrior',
                                num_prototypes=5))
    fresh.load_state_dict(old)  # strict
    assert fresh.prior.tau.item() == 0.7
    assert fresh.prior.num_updates.item() == 12
    torch.testing.assert_close(fresh.prototypes, new.prototypes)
    # mmengine's loader (checkpoints, --resume) with a model prefix
    model = torch.nn.Module()
    model.head = PMSNHead(num_prototypes=5, in_channels=4,
                          prior=dict(type='AdaptivePowerLawPrior',
                                     num_prototypes=5))
    load_state_dict(model, {f'head.{k}': v for k, v in old.items()},
                    strict=True)
    assert model.head.prior.tau.item() == 0.7


def test_gradient_flow():
    torch.manual_seed(0)
    encoder = nn.Linear(10, 8)
    target_encoder = nn.Linear(10, 8)
    head = PMSNHead(num_prototypes=6, in_channels=8)
    images = torch.randn(4, 10)
    anchor_views = torch.randn(3 * 4, 10, requires_grad=True)
    anchors = encoder(anchor_views)
    targets = target_encoder(images)  # deliberately not under no_grad
    targets.retain_grad()
    out = head.loss(anchors, targets)
    sum(v for k, v in out.items() if 'loss' in k).backward()
    for name, param in list(
            encoder.named_parameters()) + [('prototypes', head.prototypes)]:
        assert param.grad is not None, name
        assert torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, name
    assert anchor_views.grad is not None and anchor_views.grad.abs().sum() > 0
    # Targets are used without gradient.
    assert targets.grad is None
    for param in target_encoder.parameters():
        assert param.grad is None


def test_prototypes_get_no_weight_decay():

    class Model(nn.Module):

        def __init__(self):
            super().__init__()
            self.backbone = nn.Linear(8, 8)
            self.head = PMSNHead(num_prototypes=4, in_channels=8)

    model = Model()
    constructor = DefaultOptimWrapperConstructor(
        optim_wrapper_cfg=dict(
            optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.05)),
        paramwise_cfg=dict(custom_keys={'prototypes': dict(decay_mult=0.0)}))
    optim_wrapper = constructor(model)
    decay = {}
    for group in optim_wrapper.optimizer.param_groups:
        for param in group['params']:
            decay[id(param)] = group['weight_decay']
    assert decay[id(model.head.prototypes)] == 0.0
    assert decay[id(model.backbone.weight)] == 0.05


@pytest.mark.parametrize('kwargs, match', [
    (dict(num_prototypes=0, in_channels=8), 'num_prototypes must be an int'),
    (dict(num_prototypes=4, in_channels=0), 'in_channels must be an int'),
])
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PMSNHead(**kwargs)


@pytest.mark.parametrize('value', [0.0, -0.1, float('nan'), float('inf')])
def test_invalid_temperature(value):
    with pytest.raises(ValueError, match=r'temperature must be in \(0, inf\)'):
        PMSNHead(4, 8, temperature=value)


@pytest.mark.parametrize('value', [-0.1, 1.0])
def test_invalid_label_smoothing(value):
    with pytest.raises(
            ValueError, match=r'label_smoothing must be in \[0, 1\)'):
        PMSNHead(4, 8, label_smoothing=value)


@pytest.mark.parametrize('key', ['temperature', 'label_smoothing', 'prior'])
def test_head_settings_in_the_loss_config_raise(key):
    with pytest.raises(ValueError,
                       match=f"write head=dict\\(type='PMSNHead', {key}="):
        PMSNHead(4, 8, loss=dict(type='PMSNLoss', **{key: 0.1}))

