"""VICReg algorithm: config build, the official expander as mmpretrain's
NonLinearNeck, two separate view forwards, gradients, old checkpoints."""
import os.path as osp
from collections import OrderedDict

import pytest
import torch
from mmengine.config import Config
from mmpretrain.registry import MODELS
from torch import nn

from tests._configs import CONFIGS

CONFIG = """
model = dict(
    type='VICReg',
    backbone=dict(type='ResNet', depth=18, stem_channels=8, base_channels=8,
                  zero_init_residual=True),
    neck=dict(type='NonLinearNeck', in_channels=64, hid_channels=32,
              out_channels=16, num_layers=3, with_bias=True,
              with_last_bn=False, with_last_bias=False, with_avg_pool=True,
              norm_cfg=dict(type='BN1d')),
    loss=dict(type='VICRegLoss', invariance_weight=25.0,
              variance_weight=25.0, covariance_weight=1.0))
"""


def official_projector(widths):
    """``Projector`` of facebookresearch/vicreg (main_vicreg.py), named as
    the former VICRegExpander (``mlp.fc0``, ``mlp.bn0``, ...)."""
    layers = OrderedDict()
    for i in range(len(widths) - 2):
        layers[f'fc{i}'] = nn.Linear(widths[i], widths[i + 1])
        layers[f'bn{i}'] = nn.BatchNorm1d(widths[i + 1])
        layers[f'relu{i}'] = nn.ReLU(True)
    last = len(widths) - 2
    layers[f'fc{last}'] = nn.Linear(widths[-2], widths[-1], bias=False)
    return nn.Sequential(layers)


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
    assert model.neck.fc2.out_features == 16
    assert model.neck.fc2.bias is None  # last layer: plain Linear, no bias
    assert model.neck.fc0.bias is not None


def test_expander_equals_the_official_projector(tmp_path):
    """Same parameters, same outputs (train-mode BN), pooled maps, and the
    keys of the former VICRegExpander load with ``mlp.`` removed."""
    model = _model(tmp_path).train()
    torch.manual_seed(0)
    official = official_projector([64, 32, 32, 16]).train()
    # strict: the same layer names and shapes
    model.neck.load_state_dict(official.state_dict())
    fmap = torch.randn(6, 64, 2, 2)
    torch.testing.assert_close(model.neck((fmap, ))[0],
                               official(fmap.mean(dim=(2, 3))),
                               rtol=0, atol=0)
    # a checkpoint with VICRegExpander keys (neck.mlp.*) loads into VICReg
    old = {('neck.mlp.' + k[len('neck.'):]) if k.startswith('neck.') else k:
           v.clone() for k, v in model.state_dict().items()}
    fresh = _model(tmp_path)
    fresh.load_state_dict(old)  # strict
    for key, value in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[key], value), key


def test_config_expander_is_the_official_8192_mlp():
    cfg = Config.fromfile(osp.join(
        CONFIGS, 'vicreg', 'vicreg_resnet50_8xb128-amp-coslr-300e_in1k.py'))
    neck = cfg.model.neck
    assert (neck.type, neck.in_channels, neck.hid_channels,
            neck.out_channels, neck.num_layers) == ('NonLinearNeck', 2048,
                                                    8192, 8192, 3)
    assert neck.with_bias and not neck.with_last_bias
    assert not neck.with_last_bn


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
    assert torch.count_nonzero(model.neck.fc2.weight.grad) > 0


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
