import math

import pytest
import torch
from mmengine.optim import DefaultOptimWrapperConstructor
from mmpretrain.registry import MODELS
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
        loss=dict(type='PMSNLoss', prior=dict(type='PowerLawPrior', tau=0.5)))
    assert head.loss_module.prior.tau == 0.5
    built = PMSNLoss()
    assert PMSNHead(4, 8, loss=built).loss_module is built


def test_loss_uses_prototype_parameter():
    head = PMSNHead(num_prototypes=6, in_channels=8)
    anchors, targets = torch.randn(8, 8), torch.randn(4, 8)
    expected = head.loss_module(anchors, targets, head.prototypes)
    out = head.loss(anchors, targets)
    for key in expected:
        torch.testing.assert_close(out[key], expected[key])
    assert out['loss_ce'].grad_fn is not None


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
