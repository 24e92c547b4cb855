"""VICReg algorithm: config build, two separate view forwards, gradients."""
import pytest
import torch
from mmengine.config import Config

from mmpretrain.registry import MODELS

CONFIG = """
model = dict(
    type='VICReg',
    backbone=dict(type='ResNet', depth=18, stem_channels=8, base_channels=8,
                  zero_init_residual=True),
    neck=dict(type='VICRegExpander', in_channels=64, channels=(32, 32, 16)),
    loss=dict(type='VICRegLoss', invariance_weight=25.0,
              variance_weight=25.0, covariance_weight=1.0))
"""


def _model(tmp_path):
    path = tmp_path / 'vicreg_tiny.py'
    path.write_text(CONFIG)
    return MODELS.build(Config.fromfile(str(path)).model)


def _views(batch=4, size=32):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(batch, 3, size, size, generator=gen)
            for _ in range(2)]


def test_builds_from_config_with_tiny_resnet(tmp_path):
    model = _model(tmp_path)
    assert type(model).__name__ == 'VICReg'
    assert type(model.backbone).__name__ == 'ResNet'
    assert type(model.loss_module).__name__ == 'VICRegLoss'
    assert model.loss_module.variance_weight == 25.0
    assert model.neck.out_channels == 16


def test_every_trainable_parameter_gets_a_gradient(tmp_path):
    model = _model(tmp_path)
    model.train()
    losses = model.loss(_views(), data_samples=[])
    assert {'loss_invariance', 'loss_variance', 'loss_covariance',
            'std_mean'} <= set(losses)
    total = sum(v for k, v in losses.items() if 'loss' in k)
    assert torch.isfinite(total)
    total.backward()
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert any(n.startswith('backbone.') for n in names)
    assert any(n.startswith('neck.') for n in names)
    for name, param in model.named_parameters():
        if param.requires_grad:
            assert param.grad is not None, name
            assert torch.isfinite(param.grad).all(), name
    # the last expander layer always receives a non-zero gradient
    assert torch.count_nonzero(model.neck.mlp.fc2.weight.grad) > 0


def test_loss_is_vicreg_loss_of_separate_view_forwards(tmp_path):
    model = _model(tmp_path)
    model.train()
    views = _views()
    losses = model.loss(views, data_samples=[])
    # each view alone through backbone + expander (BatchNorm statistics of
    # one view), as in the official code
    z_a = model.neck(model.backbone(views[0]))[0]
    z_b = model.neck(model.backbone(views[1]))[0]
    expected = model.loss_module(z_a, z_b)
    for key, value in expected.items():
        torch.testing.assert_close(losses[key], value)
    # a joint forward of both views would give other BN statistics
    joint = model.neck(model.backbone(torch.cat(views)))[0]
    assert not torch.allclose(joint[:4], z_a)


def test_wrong_number_of_views_raises(tmp_path):
    model = _model(tmp_path)
    with pytest.raises(ValueError, match='exactly 2 views, got 3'):
        model.loss(_views() + _views()[:1], data_samples=[])
    with pytest.raises(ValueError, match='exactly 2 views, got 1'):
        model.loss(_views()[0], data_samples=[])
