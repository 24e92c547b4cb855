"""PMSN algorithm: backbones, masking of random views only, gradients, EMA."""
import math

import pytest
import torch
import torch.nn as nn
from mmengine.logging import MessageHub
from mmpretrain.registry import MODELS

from tests._profiling.op_counter import OpCounter, assert_host_syncs

D = 32


def _vit(type='MSNViT'):
    return dict(
        type=type,
        arch=dict(embed_dims=48, num_layers=2, num_heads=3,
                  feedforward_channels=96),
        img_size=32, patch_size=8)


def _pmsn(backbone, in_channels, mask_ratio=0.0, num_random_views=1,
          prior=None, **kwargs):
    return MODELS.build(
        dict(
            type='PMSN',
            backbone=backbone,
            neck=dict(type='MSNProjector', in_channels=in_channels,
                      hidden_channels=64, out_channels=D),
            head=dict(
                type='PMSNHead', num_prototypes=7, in_channels=D,
                prior=prior or dict(type='PowerLawPrior', tau=0.5),
                loss=dict(type='PMSNLoss', prior_weight=5.0)),
            num_random_views=num_random_views,
            mask_ratio=mask_ratio,
            **kwargs))


def _views(batch=4, sizes=(32, 32, 32, 16, 16)):
    torch.manual_seed(0)
    return [torch.randn(batch, 3, s, s) for s in sizes]


@pytest.mark.parametrize('backbone, channels, mask', [
    (_vit(), 48, 0.3),
    (dict(type='ResNet_CIFAR', depth=18), 512, 0.0),
    (dict(type='TIMMBackbone', model_name='resnet10t', pretrained=False,
          features_only=False, num_classes=0), 512, 0.0),
])
def test_every_trainable_parameter_gets_a_gradient(backbone, channels, mask):
    model = _pmsn(backbone, channels, mask_ratio=mask, num_random_views=2)
    model.train()
    losses = model.loss(_views(), data_samples=[])
    total = sum(v for k, v in losses.items() if 'loss' in k)
    assert torch.isfinite(total)
    total.backward()
    online = [(n, p) for n, p in model.named_parameters()
              if not n.startswith('target_net')]
    assert any(n == 'head.prototypes' for n, _ in online)
    for name, param in online:
        if param.requires_grad:
            assert param.grad is not None, name
            assert torch.isfinite(param.grad).all(), name
    assert torch.count_nonzero(model.head.prototypes.grad) > 0
    for name, param in model.target_net.named_parameters():
        assert not param.requires_grad and param.grad is None, name


def test_random_views_masked_focal_views_not():
    model = _pmsn(_vit(), 48, mask_ratio=0.5, num_random_views=2)
    seen = []
    handle = model.backbone.layers[0].register_forward_pre_hook(
        lambda mod, args: seen.append(tuple(args[0].shape)))
    target_seen = []
    model.target_net.module[0].layers[0].register_forward_pre_hook(
        lambda mod, args: target_seen.append(tuple(args[0].shape)))
    model.loss(_views(batch=4), data_samples=[])
    handle.remove()
    n32 = (32 // 8)**2  # 16 patches per 32 px view
    n16 = (16 // 8)**2  # 4 patches per 16 px focal view
    # random views: 2 views batched, CLS + floor(16 * 0.5) patches
    assert seen[0] == (2 * 4, 1 + math.floor(n32 * 0.5), 48)
    # focal views: 2 views batched, unmasked
    assert seen[1] == (2 * 4, 1 + n16, 48)
    assert len(seen) == 2
    # target: one unmasked view through the EMA copy
    assert target_seen == [(4, 1 + n32, 48)]


def test_uniform_prior_model_equals_msn_me_max():
    model = _pmsn(_vit(), 48, prior=dict(type='UniformPrior'))
    losses = model.loss(_views(sizes=(32, 32)), data_samples=[])
    h = losses['mean_probs_entropy']
    # lambda * KL(p̄ || U) = lambda * (log K - H(p̄))
    assert losses['loss_prior'].item() == pytest.approx(
        5.0 * (math.log(7) - h.item()), abs=1e-5)


def test_ema_target_update_follows_momentum():
    model = _pmsn(_vit(), 48, target_momentum=0.9, target_momentum_end=0.9)
    views = _views(sizes=(32, 32))
    model.init_weights()  # the target copies the initialised online encoder
    old = {n: p.clone() for n, p in model.target_net.module.named_parameters()}
    losses = model.loss(views, data_samples=[])
    assert losses['target_momentum'].item() == pytest.approx(0.9)
    with torch.no_grad():  # a fake optimizer step
        for p in model.backbone.parameters():
            p.add_(0.1)
    online = dict(nn.Sequential(model.backbone,
                                model.neck).named_parameters())
    model.update_target()
    for name, param in model.target_net.module.named_parameters():
        expected = 0.9 * old[name] + 0.1 * online[name]
        assert torch.allclose(param, expected, atol=1e-6), name


def test_target_momentum_follows_msn_schedule_in_a_run():
    model = _pmsn(_vit(), 48, target_momentum=0.98)
    hub = MessageHub.get_instance('pmsn-momentum-test')
    hub.update_info('max_iters', 8)
    views = _views(sizes=(32, 32))
    for step in range(3):
        losses = model.loss(views, data_samples=[])
        model.update_target()
    # the third update (steps = 2) of 8 iterations, stretched by 1.25
    assert losses['target_momentum'].item() == pytest.approx(
        0.98 + 0.02 * 2 / 10, abs=1e-6)
    assert model.target_net.steps.item() == 3


def test_a_step_without_target_update_is_refused():
    model = _pmsn(_vit(), 48)
    views = _views(sizes=(32, 32))
    model.loss(views, data_samples=[])
    with pytest.raises(RuntimeError, match="Add dict\\(type='TargetEMAHook'"):
        model.loss(views, data_samples=[])
    model.eval()  # evaluation does not need (or make due) an update
    model.loss(views, data_samples=[])


@pytest.mark.parametrize('kwargs, match', [
    (dict(mask_ratio=0.2), 'mask_ratio=0.2 needs a token-based backbone'),
    (dict(mask_ratio=1.0), 'mask_ratio'),
    (dict(num_random_views=0), 'num_random_views'),
    (dict(target_momentum=1.5), r'target_momentum must be in \(0, 1\)'),
    (dict(target_momentum_end=0.0), r'target_momentum_end must be in'),
])
def test_bad_settings_raise(kwargs, match):
    backbone = dict(type='ResNet_CIFAR', depth=18) if kwargs.get(
        'mask_ratio') == 0.2 else _vit()
    channels = 512 if kwargs.get('mask_ratio') == 0.2 else 48
    with pytest.raises(ValueError, match=match):
        _pmsn(backbone, channels, **kwargs)


@pytest.mark.parametrize('backbone, channels, match', [
    (dict(type='ResNet', depth=18), 512,
     'mask_ratio=0.5.*VisionTransformer.*ResNet'),
    (dict(type='TIMMBackbone', model_name='vit_tiny_patch16_224',
          pretrained=False, num_classes=0, img_size=32, patch_size=8),
     192, 'mask_ratio=0.5.*VisionTransformer.*TIMMBackbone'),
    (_vit(type='VisionTransformer'), 48, 'use MSNViT'),
])
def test_patch_drop_needs_a_backbone_taking_mask_ratio(backbone, channels,
                                                       match):
    with pytest.raises(ValueError, match=match):
        _pmsn(backbone, channels, mask_ratio=0.5)


def test_mask_ratio_zero_runs_plain_backbones_unchanged():
    for backbone, channels in ((dict(type='ResNet_CIFAR', depth=18), 512),
                               (_vit(type='VisionTransformer'), 48)):
        model = _pmsn(backbone, channels, mask_ratio=0.0)
        model.eval()
        x = torch.randn(2, 3, 32, 32)
        with torch.no_grad():
            expected = model.neck(model.backbone(x))[0]
            torch.testing.assert_close(model._encode([x], 0.0), expected,
                                       rtol=0, atol=0)


def test_too_few_views_raise():
    model = _pmsn(_vit(), 48, num_random_views=2)
    with pytest.raises(ValueError, match='num_random_views=2'):
        model.loss(_views(sizes=(32, 32)), data_samples=[])


def test_target_update_and_logged_momentum_read_no_device_value():
    """One fused update per step from the host step counter: a few ops
    whatever the depth, no host sync; ``target_momentum`` is logged from
    a CPU tensor (before: 1 device read of ``steps`` per parameter)."""
    hub = MessageHub.get_instance('pmsn-momentum-sync-test')
    hub.update_info('max_iters', 8)
    model = _pmsn(_vit(), 48)
    model.init_weights()
    views = _views(sizes=(32, 32))
    losses = model.loss(views, data_samples=[])
    assert losses['target_momentum'].device.type == 'cpu'
    assert losses['target_momentum'].dtype == torch.float64
    with OpCounter() as counter:
        momentum = model.next_target_momentum()
        model.update_target()
    assert_host_syncs(counter, what='the target update')
    assert counter.ops <= 20, counter.op_names
    assert momentum == 1 - model.target_net.current_momentum == 0.996
