"""ConcatCLSNeck and AdaptivePoolNeck against manual computations."""
import pytest
import torch
import torch.nn.functional as F
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS

from pmsn_mm.models.necks import AdaptivePoolNeck, ConcatCLSNeck

VIT = dict(
    type='VisionTransformer',
    arch=dict(embed_dims=16, num_layers=5, num_heads=2,
              feedforward_channels=32),
    img_size=16,
    patch_size=4)


def _vit(**kwargs):
    init_default_scope('mmpretrain')
    torch.manual_seed(0)
    vit = MODELS.build(dict(VIT, **kwargs))
    if vit.final_norm:
        with torch.no_grad():  # non-trivial final norm
            vit.ln1.weight.uniform_(0.5, 1.5)
            vit.ln1.bias.normal_()
    vit.eval()  # (mmpretrain's BaseBackbone.train returns None)
    return vit


def test_concat_of_last_4_cls_equals_manual_concatenation():
    vit = _vit(out_indices=[-4, -3, -2, -1])
    x = torch.randn(3, 3, 16, 16)
    outs = vit(x)
    assert len(outs) == 4
    (feat, ) = ConcatCLSNeck(num_layers=4)(outs)
    assert feat.shape == (3, 64)
    torch.testing.assert_close(feat, torch.cat(outs, dim=1))
    # a longer tuple: the last 4 are taken, in order
    (feat6, ) = ConcatCLSNeck(num_layers=4)((torch.zeros(3, 16), ) + outs)
    torch.testing.assert_close(feat6, feat)


def test_concat_with_final_norm_matches_vissl_concat_cls4():
    """VISSL/DINO: final LayerNorm on each of the last 4 blocks' tokens."""
    vit = _vit(out_indices=[-4, -3, -2, -1])
    raw = _vit(out_indices=[-4, -3, -2, -1], final_norm=False)
    raw.load_state_dict(vit.state_dict(), strict=False)  # same weights
    x = torch.randn(2, 3, 16, 16)
    # reference: run the blocks by hand, norm every token with ln1
    with torch.no_grad():
        tokens, _ = vit.patch_embed(x)
        tokens = torch.cat([vit.cls_token.expand(2, -1, -1), tokens], 1)
        tokens = tokens + vit.pos_embed
        interms = []
        for layer in vit.layers:
            tokens = layer(tokens)
            interms.append(vit.ln1(tokens)[:, 0])
        expected = torch.cat(interms[-4:], dim=1)
        neck = ConcatCLSNeck(4, in_channels=16, final_norm=True)
        neck.load_state_dict(
            {k[len('ln1.'):]: v for k, v in vit.state_dict().items()
             if k.startswith('ln1.')})
        (feat, ) = neck(raw(x))
        torch.testing.assert_close(feat, expected, rtol=1e-5, atol=1e-5)
        # its last chunk is mmpretrain's usual last-layer CLS token
        torch.testing.assert_close(
            feat[:, -16:], _vit()(x)[0], rtol=1e-5, atol=1e-5)
    assert not any(p.requires_grad for p in neck.parameters())
    assert set(neck.state_dict()) == {'weight', 'bias'}


def test_pool_8192_equals_manual_adaptive_pooling():
    x = torch.randn(2, 2048, 7, 7)
    (feat, ) = AdaptivePoolNeck(output_size=2)((x, ))
    assert feat.shape == (2, 8192)
    # adaptive bins of 7 -> 2: rows/cols [0, 4) and [3, 7)
    bins = [(0, 4), (3, 7)]
    manual = torch.stack([
        torch.stack([x[:, :, r0:r1, c0:c1].mean(dim=(2, 3))
                     for (c0, c1) in bins], dim=-1)
        for (r0, r1) in bins
    ], dim=-2)  # (B, C, 2, 2)
    torch.testing.assert_close(feat, manual.reshape(2, -1))
    # channel-major: the 4 cells of channel c are contiguous
    torch.testing.assert_close(feat.view(2, 2048, 4)[:, 5],
                               manual[:, 5].reshape(2, 4))


def test_pool_2048_equals_global_average_pooling():
    x = torch.randn(2, 2048, 7, 7)
    (feat, ) = AdaptivePoolNeck(output_size=1)(x)
    torch.testing.assert_close(feat, x.mean(dim=(2, 3)))
    init_default_scope('mmpretrain')
    (gap, ) = MODELS.build(dict(type='GlobalAveragePooling'))((x, ))
    torch.testing.assert_close(feat, gap)
    (rect, ) = AdaptivePoolNeck(output_size=(1, 2))(x)
    torch.testing.assert_close(
        rect, F.adaptive_avg_pool2d(x, (1, 2)).flatten(1))


@pytest.mark.parametrize('kwargs, match', [
    (dict(num_layers=0), 'num_layers must be an int >= 1'),
    (dict(num_layers=True), 'num_layers must be an int >= 1'),
    (dict(final_norm=True), r'in_channels \(the token dim, needed with '
     r'final_norm=True\) must be an int >= 1'),
    (dict(final_norm=True, in_channels=0), r'in_channels \(the token dim, '
     r'needed with final_norm=True\) must be an int >= 1'),
    (dict(norm_eps=0.0), r'norm_eps must be in \(0, inf\)'),
])
def test_concat_neck_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ConcatCLSNeck(**kwargs)


def test_concat_neck_input_errors():
    neck = ConcatCLSNeck(num_layers=4)
    with pytest.raises(ValueError, match='needs at least 4 backbone outputs'):
        neck((torch.zeros(2, 8), ) * 3)
    with pytest.raises(ValueError, match="out_type='cls_token'"):
        neck((torch.zeros(2, 5, 8), ) * 4)


@pytest.mark.parametrize('size', [0, (2, 0), (1, 2, 3), True, 1.5])
def test_pool_neck_validation(size):
    with pytest.raises(ValueError, match='output_size must be an int >= 1'):
        AdaptivePoolNeck(output_size=size)


def test_pool_neck_needs_a_feature_map():
    with pytest.raises(ValueError, match=r'\(B, C, H, W\)'):
        AdaptivePoolNeck()(torch.zeros(2, 8))
