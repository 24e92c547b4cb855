"""PooledTIMMBackbone: a timm model's own pooled feature (the CLS token of
a ViT), MSN's patch-drop for token models, and PMSN on timm models (a timm
ViT under mmpretrain's TIMMBackbone gave the projector all its tokens)."""
import pytest
import torch
from mmpretrain.registry import MODELS

from pmsn_mm.models.backbones import PooledTIMMBackbone

VIT_KWARGS = dict(img_size=32, patch_size=8, embed_dim=32, depth=2,
                  num_heads=2, dynamic_img_size=True)


def _vit(**kwargs):
    torch.manual_seed(0)
    backbone = PooledTIMMBackbone('vit_tiny_patch16_224',
                                  model_kwargs=dict(VIT_KWARGS), **kwargs)
    with torch.no_grad():  # a CLS token unlike the patch tokens
        backbone.timm_model.cls_token.normal_()
    backbone.eval()  # mmpretrain's train() returns None
    return backbone


def _resnet(**kwargs):
    torch.manual_seed(0)
    backbone = PooledTIMMBackbone('resnet10t', **kwargs)
    backbone.eval()
    return backbone


def _images(batch=3, size=32):
    return torch.randn(batch, 3, size, size,
                       generator=torch.Generator().manual_seed(0))


def test_vit_returns_the_cls_token_after_the_final_norm():
    vit, x = _vit(), _images()
    (out, ) = vit(x)
    model = vit.timm_model
    tokens = model.forward_features(x)  # (B, 1 + N, C), after model.norm
    assert tokens.shape == (3, 1 + 16, 32)
    assert torch.equal(out, tokens[:, 0])
    assert vit.out_channels == 32 and vit.supports_mask_ratio


def test_cnn_returns_its_global_average_pool():
    resnet, x = _resnet(), _images()
    (out, ) = resnet(x)
    fmap = resnet.timm_model.forward_features(x)  # (B, C, H, W)
    assert out.shape == (3, resnet.out_channels) == (3, 512)
    torch.testing.assert_close(out, fmap.mean(dim=(2, 3)))
    assert not resnet.supports_mask_ratio
    (kept, ) = _resnet(keep_spatial_dims=True)(x)
    assert kept.shape == (3, 512, 1, 1) and torch.equal(kept[:, :, 0, 0],
                                                        out)


def test_vit_takes_other_image_sizes():
    (out, ) = _vit()(_images(size=16))  # the focal views' 16 = 2 x 8 px
    assert out.shape == (3, 32)


def test_patch_drop_keeps_the_cls_token_and_floor_of_the_patches():
    vit, x = _vit(), _images()
    lengths = []
    hook = vit.timm_model.blocks[0].register_forward_pre_hook(
        lambda module, args: lengths.append(args[0].shape[1]))
    (plain, ) = vit(x)
    g = torch.Generator().manual_seed(1)
    (masked, ) = vit(x, mask_ratio=0.3, generator=g)
    (again, ) = vit(x, mask_ratio=0.3,
                    generator=torch.Generator().manual_seed(1))
    (off, ) = vit(x)
    hook.remove()
    # 16 patches: floor(16 * 0.7) = 11 kept, plus the CLS token
    assert lengths == [17, 12, 12, 17]
    assert torch.equal(masked, again) and not torch.equal(masked, plain)
    assert torch.equal(off, plain)  # the ratio is reset after the forward


def test_cnn_refuses_patch_drop():
    with pytest.raises(ValueError, match="mask_ratio=0.2 needs a timm model "
                       "with patch tokens.*'resnet10t'.*set mask_ratio=0"):
        _resnet()(_images(), mask_ratio=0.2)


@pytest.mark.parametrize('kwargs, match', [
    (dict(model_kwargs=dict(features_only=True)),
     'features_only must be False'),
    (dict(model_kwargs=[('img_size', 32)]), 'model_kwargs must be a dict'),
    (dict(pretrained='yes'), r'pretrained must be one of \(True, False\)'),
    (dict(keep_spatial_dims=1),
     r'keep_spatial_dims must be one of \(True, False\)'),
    (dict(model_kwargs=dict(global_pool='')),
     r'returned shape \(2, 512, 1, 1\), not \(B, C\): set a global_pool'),
])
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        model = PooledTIMMBackbone('resnet10t', **kwargs)
        model(_images(batch=2))


def test_misspelled_key_is_named():
    with pytest.raises(TypeError,
                       match="unexpected keyword argument 'modle_kwargs'"):
        MODELS.build(dict(type='PooledTIMMBackbone', model_name='resnet10t',
                          modle_kwargs=dict()))


def _pmsn(backbone, in_channels, mask_ratio):
    return MODELS.build(
        dict(
            type='PMSN',
            backbone=backbone,
            neck=dict(type='MSNProjector', in_channels=in_channels,
                      hidden_channels=64, out_channels=16),
            head=dict(type='PMSNHead', num_prototypes=5, in_channels=16,
                      prior=dict(type='PowerLawPrior', tau=0.25)),
            mask_ratio=mask_ratio))


@pytest.mark.parametrize('backbone, channels, mask', [
    (dict(type='PooledTIMMBackbone', model_name='vit_tiny_patch16_224',
          model_kwargs=VIT_KWARGS), 32, 0.15),
    (dict(type='PooledTIMMBackbone', model_name='resnet10t'), 512, 0.0),
])
def test_pmsn_trains_timm_models(backbone, channels, mask):
    torch.manual_seed(0)
    model = _pmsn(backbone, channels, mask)
    model.train()
    views = [_images(4, s) for s in (32, 32, 16, 16)]  # target, random, focal
    losses = model.loss(views, data_samples=[])
    total = sum(v for k, v in losses.items() if 'loss' in k)
    assert torch.isfinite(total)
    total.backward()
    online = [(n, p) for n, p in model.named_parameters()
              if p.requires_grad and not n.startswith('target_net')]
    assert any(n.startswith('backbone.timm_model.') for n, _ in online)
    missing = [n for n, p in online if p.grad is None]
    assert missing == []
    assert all(torch.isfinite(p.grad).all() for _, p in online)
    assert all(p.grad is None for n, p in model.named_parameters()
               if n.startswith('target_net'))


def test_pmsn_refuses_patch_drop_on_a_timm_cnn_at_build():
    with pytest.raises(ValueError, match='mask_ratio=0.15 needs a token-based'
                       '.*PooledTIMMBackbone.*set mask_ratio=0'):
        _pmsn(dict(type='PooledTIMMBackbone', model_name='resnet10t'), 512,
              0.15)


def test_mmpretrain_timm_backbone_gives_the_projector_all_tokens():
    """The failure this backbone replaces (issue 27)."""
    model = _pmsn(dict(type='TIMMBackbone', model_name='vit_tiny_patch16_224',
                       pretrained=False, **VIT_KWARGS), 32, 0.0)
    with pytest.raises(ValueError, match=r'has shape \(4, 17, 32\)'):
        model.loss([_images(4, 32)] * 2, data_samples=[])
