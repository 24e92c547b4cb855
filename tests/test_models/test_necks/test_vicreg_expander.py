"""VICRegExpander: official layer layout, pooling, validation."""
import inspect

import pytest
import torch
from torch import nn

from pmsn_mm.models.necks import VICRegExpander


def test_official_default_widths():
    default = inspect.signature(VICRegExpander).parameters['channels'].default
    assert tuple(default) == (8192, 8192, 8192)  # official --mlp


def test_official_layout():
    neck = VICRegExpander(in_channels=20, channels=(32, 32, 16))
    kinds = [type(m) for m in neck.mlp]
    assert kinds == [
        nn.Linear, nn.BatchNorm1d, nn.ReLU, nn.Linear, nn.BatchNorm1d,
        nn.ReLU, nn.Linear
    ]
    assert [m.out_features for m in neck.mlp if isinstance(m, nn.Linear)] \
        == [32, 32, 16]
    assert neck.mlp.fc0.in_features == 20
    assert neck.mlp.fc2.bias is None  # last layer: plain Linear, no bias
    assert neck.mlp.fc0.bias is not None


def test_pools_feature_maps_and_takes_last_output():
    torch.manual_seed(0)
    neck = VICRegExpander(in_channels=6, channels=(5, 4)).eval()
    fmap = torch.randn(3, 6, 2, 2)
    out = neck((torch.randn(3, 1, 1, 1), fmap))
    assert isinstance(out, tuple) and out[0].shape == (3, 4)
    torch.testing.assert_close(out[0], neck(fmap.mean(dim=(2, 3)))[0])
    single = VICRegExpander(in_channels=6, channels=(4, ))
    assert [type(m) for m in single.mlp] == [nn.Linear]


@pytest.mark.parametrize('kwargs, match', [
    (dict(in_channels=0), 'in_channels must be an int >= 1'),
    (dict(in_channels=8, channels=()), 'channels must list at least one'),
    (dict(in_channels=8, channels=(16, 0)), r'channels\[1\] must be'),
    (dict(in_channels=8, channels=(16, 2.5)), r'channels\[1\] must be'),
])
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VICRegExpander(**kwargs)


def test_bad_input_shape_raises():
    with pytest.raises(ValueError, match=r'\(B, C\) or \(B, C, H, W\)'):
        VICRegExpander(in_channels=4, channels=(4, ))(torch.randn(2, 4, 3))
