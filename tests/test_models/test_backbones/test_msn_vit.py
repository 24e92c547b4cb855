import pytest
import torch
from mmpretrain.models.backbones import ResNet, VisionTransformer
from mmpretrain.models.backbones.deit import DistilledVisionTransformer

from pmsn_mm.models.utils import (drop_patch_tokens, forward_with_patch_drop,
                                  random_keep_indices, supports_patch_drop,
                                  vit_forward_with_patch_drop)

ARCH = dict(embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64)


def _vit(**kwargs):
    torch.manual_seed(0)
    vit = VisionTransformer(arch=ARCH, img_size=32, patch_size=8, **kwargs)
    # Non-zero cls token / pos embed so that the CLS check is meaningful.
    with torch.no_grad():
        if vit.cls_token is not None:
            vit.cls_token.normal_()
        vit.pos_embed.normal_()
    vit.eval()  # mmpretrain's train() returns None
    return vit


def _images(batch=3):
    return torch.randn(
        batch, 3, 32, 32, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize('kwargs', [
    dict(),
    dict(out_type='raw', out_indices=(0, 1)),
    dict(out_type='featmap'),
    dict(out_type='avg_featmap', with_cls_token=False),
    dict(final_norm=False, pre_norm=True),
])
def test_mask_ratio_zero_equals_vit_forward(kwargs):
    vit, x = _vit(**kwargs), _images()
    expected = vit(x)
    out = vit_forward_with_patch_drop(vit, x, 0.0)
    assert len(out) == len(expected)
    for a, b in zip(out, expected):
        assert torch.equal(a, b)


def test_dropped_tokens_and_cls_first():
    vit, x = _vit(), _images()
    seen = {}
    vit.layers[0].register_forward_hook(
        lambda mod, inp, out: seen.setdefault('tokens', inp[0]))
    out = vit_forward_with_patch_drop(vit, x, 0.5)
    assert out[0].shape == (3, 32)
    # 16 patches -> 1 + floor(16 * 0.5) tokens.
    assert seen['tokens'].shape == (3, 1 + 8, 32)
    cls = (vit.cls_token + vit.pos_embed[:, :1]).expand(3, -1, -1)
    torch.testing.assert_close(seen['tokens'][:, :1], cls)


def test_kept_tokens_are_the_chosen_patches():
    vit, x = _vit(), _images()
    seen = {}
    vit.layers[0].register_forward_hook(
        lambda mod, inp, out: seen.setdefault('tokens', inp[0]))
    vit_forward_with_patch_drop(
        vit, x, 0.25, generator=torch.Generator().manual_seed(3))
    full, _ = vit.patch_embed(x)
    full = full + vit.pos_embed[:, 1:]
    keep = random_keep_indices(3, 16, 12, x.device,
                               torch.Generator().manual_seed(3))
    expected = torch.stack([full[b, keep[b]] for b in range(3)])
    torch.testing.assert_close(seen['tokens'][:, 1:], expected)


def test_no_cls_token_keeps_only_patches():
    vit, x = _vit(out_type='avg_featmap', with_cls_token=False), _images()
    seen = {}
    vit.layers[0].register_forward_hook(
        lambda mod, inp, out: seen.setdefault('tokens', inp[0]))
    out = vit_forward_with_patch_drop(vit, x, 0.15)
    assert seen['tokens'].shape == (3, 13, 32)  # floor(16 * 0.85)
    assert out[0].shape == (3, 32)


def test_keep_indices_independent_per_sample():
    gen = torch.Generator().manual_seed(0)
    keep = random_keep_indices(64, 16, 8, torch.device('cpu'), gen)
    assert keep.shape == (64, 8)
    assert torch.all(keep[:, 1:] > keep[:, :-1])  # sorted, distinct
    assert len({tuple(row.tolist()) for row in keep}) > 1


def test_drop_patch_tokens_keeps_extra_tokens():
    tokens = torch.arange(2 * 5 * 1, dtype=torch.float32).reshape(2, 5, 1)
    out = drop_patch_tokens(tokens, 2, num_extra_tokens=1)
    assert out.shape == (2, 3, 1)
    assert torch.equal(out[:, 0], tokens[:, 0])


def test_supports_patch_drop():
    assert supports_patch_drop(_vit())
    assert not supports_patch_drop(ResNet(depth=18))
    assert not supports_patch_drop(
        DistilledVisionTransformer(arch=ARCH, img_size=32, patch_size=8))


def test_resnet_with_mask_ratio_raises():
    resnet = ResNet(depth=18)
    resnet.eval()
    with pytest.raises(
            ValueError, match='mask_ratio=0.5.*VisionTransformer.*ResNet'):
        forward_with_patch_drop(resnet, _images(1), 0.5)
    # mask_ratio 0 just runs the backbone.
    out = forward_with_patch_drop(resnet, _images(1), 0.0)
    assert torch.equal(out[-1], resnet(_images(1))[-1])


def test_timm_model_with_mask_ratio_raises():
    timm_vit = pytest.importorskip('timm').models.vision_transformer
    model = timm_vit.VisionTransformer(
        img_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=2)
    with pytest.raises(ValueError, match='mask_ratio=0.3.*VisionTransformer'):
        forward_with_patch_drop(model, _images(1), 0.3)


@pytest.mark.parametrize('ratio', [-0.1, 1.0, 1.5])
def test_invalid_mask_ratio(ratio):
    with pytest.raises(ValueError, match=r'mask_ratio must be in \[0, 1\)'):
        vit_forward_with_patch_drop(_vit(), _images(1), ratio)


def test_mask_ratio_keeping_no_patch():
    with pytest.raises(ValueError, match='mask_ratio=0.95 keeps no patch'):
        vit_forward_with_patch_drop(_vit(), _images(1), 0.95)


def test_featmap_with_mask_ratio_raises():
    with pytest.raises(ValueError, match="mask_ratio=0.5.*out_type='featmap'"):
        vit_forward_with_patch_drop(_vit(out_type='featmap'), _images(1), 0.5)
