import pytest
import torch
from mmpretrain.registry import MODELS
from torch import nn

from pmsn_mm.models.necks import MSNProjector


def test_structure_follows_official_msn():
    neck = MODELS.build(dict(type='MSNProjector', in_channels=384))
    names = [name for name, _ in neck.mlp.named_children()]
    assert names == ['fc1', 'bn1', 'gelu1', 'fc2', 'bn2', 'gelu2', 'fc3']
    types = [type(m) for m in neck.mlp]
    assert types == [
        nn.Linear, nn.BatchNorm1d, nn.GELU, nn.Linear, nn.BatchNorm1d, nn.GELU,
        nn.Linear
    ]
    assert (neck.mlp.fc1.in_features, neck.mlp.fc1.out_features) == (384, 2048)
    assert neck.mlp.fc2.out_features == 2048
    assert neck.mlp.fc3.out_features == 256


def test_without_bn():
    neck = MSNProjector(8, 16, 4, with_bn=False)
    assert [type(m) for m in neck.mlp
            ] == [nn.Linear, nn.GELU, nn.Linear, nn.GELU, nn.Linear]


def test_init_weights_trunc_normal_zero_bias():
    torch.manual_seed(0)
    neck = MSNProjector(64, 256, 32)
    neck.init_weights()
    for layer in (neck.mlp.fc1, neck.mlp.fc2, neck.mlp.fc3):
        assert torch.all(layer.bias == 0)
        assert layer.weight.std().item() == pytest.approx(0.02, rel=0.2)


def test_forward_2d_tuple_and_4d():
    torch.manual_seed(0)
    neck = MSNProjector(in_channels=8, hidden_channels=16, out_channels=4)
    neck.eval()
    x = torch.randn(3, 8)
    out = neck(x)
    assert isinstance(out, tuple) and len(out) == 1
    assert out[0].shape == (3, 4)
    torch.testing.assert_close(neck((torch.randn(3, 8), x))[0], out[0])
    fmap = torch.randn(3, 8, 5, 5)
    torch.testing.assert_close(neck([fmap])[0], neck(fmap.mean(dim=(2, 3)))[0])


def test_invalid_input_shape():
    neck = MSNProjector(in_channels=8, hidden_channels=16, out_channels=4)
    with pytest.raises(ValueError, match=r'\(B, C\) or \(B, C, H, W\)'):
        neck(torch.randn(2, 5, 8))


def test_invalid_channels():
    with pytest.raises(ValueError, match='hidden_channels must be an int'):
        MSNProjector(in_channels=8, hidden_channels=0)
