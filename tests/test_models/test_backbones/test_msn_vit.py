"""MSNViT: patch-drop after the position embedding, the parent's forward and
state dict otherwise."""
import pytest
import torch
from mmpretrain.models.backbones import VisionTransformer
from mmpretrain.registry import MODELS

from pmsn_mm.models.backbones import MSNViT
from pmsn_mm.models.utils import random_keep_indices

ARCH = dict(embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64)


def _vit(**kwargs):
    torch.manual_seed(0)
    vit = MSNViT(arch=ARCH, img_size=32, patch_size=8, **kwargs)
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
    plain = VisionTransformer(arch=ARCH, img_size=32, patch_size=8, **kwargs)
    plain.load_state_dict(vit.state_dict())  # same keys, strict
    plain.eval()
    expected = plain(x)
    for out in (vit(x), vit(x, mask_ratio=0.0)):
        assert len(out) == len(expected)
        for a, b in zip(out, expected):
            assert torch.equal(a, b)


def test_state_dict_is_a_vision_transformers():
    vit = _vit()
    plain = VisionTransformer(arch=ARCH, img_size=32, patch_size=8)
    assert list(vit.state_dict()) == list(plain.state_dict())
    vit.load_state_dict(plain.state_dict())
    assert isinstance(MODELS.build(dict(type='MSNViT', arch=ARCH,
                                        img_size=32, patch_size=8)), MSNViT)


def test_dropped_tokens_and_cls_first():
    vit, x = _vit(), _images()
    seen = {}
    vit.layers[0].register_forward_hook(
        lambda mod, inp, out: seen.setdefault('tokens', inp[0]))
    out = vit(x, mask_ratio=0.5)
    assert out[0].shape == (3, 32)
    # 16 patches -> 1 + floor(16 * 0.5) tokens.
    assert seen['tokens'].shape == (3, 1 + 8, 32)
    cls = (vit.cls_token + vit.pos_embed[:, :1]).expand(3, -1, -1)
    torch.testing.assert_close(seen['tokens'][:, :1], cls)
    # the next call without mask_ratio sees every token again
    seen.clear()
    vit(x)
    assert seen['tokens'].shape == (3, 1 + 16, 32)


def test_kept_tokens_are_the_chosen_patches():
    vit, x = _vit(), _images()
    seen = {}
    vit.layers[0].register_forward_hook(
        lambda mod, inp, out: seen.setdefault('tokens', inp[0]))
    vit(x, mask_ratio=0.25, generator=torch.Generator().manual_seed(3))
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
    out = vit(x, mask_ratio=0.15)
    assert seen['tokens'].shape == (3, 13, 32)  # floor(16 * 0.85)
    assert out[0].shape == (3, 32)


@pytest.mark.parametrize('ratio', [-0.1, 1.0, 1.5])
def test_invalid_mask_ratio(ratio):
    with pytest.raises(ValueError, match=r'mask_ratio must be in \[0, 1\)'):
        _vit()(_images(1), mask_ratio=ratio)


def test_mask_ratio_keeping_no_patch():
    vit = _vit()
    with pytest.raises(ValueError, match='mask_ratio=0.95 keeps no patch'):
        vit(_images(1), mask_ratio=0.95)
    # the failed call leaves the backbone unmasked
    assert vit(_images(1))[0].shape == (1, 32)
    assert vit.drop_after_pos.patch_drop.mask_ratio == 0.0


def test_featmap_with_mask_ratio_raises():
    with pytest.raises(ValueError, match="mask_ratio=0.5.*out_type='featmap'"):
        _vit(out_type='featmap')(_images(1), mask_ratio=0.5)
