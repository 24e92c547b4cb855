# PSwAV with timm's ViT-S/16 (random init, pretrained=False) instead of the
# ResNet-50: the iNat18 power-law config (./pswav_resnet50_8xb32-mcrop-coslr-
# 200e_inat18-power-law.py, SwAV's recipe) with only the encoder swapped
# (docs/backbones.md). PooledTIMMBackbone returns the CLS token after the
# final norm (timm's global_pool='token'), as (B, 384, 1, 1) for
# mmpretrain's SwAVNeck; dynamic_img_size=True for the 96 px crops.
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-power-law.py'
model = dict(
    backbone=dict(
        _delete_=True,
        type='PooledTIMMBackbone',
        model_name='vit_small_patch16_224',
        pretrained=False,
        keep_spatial_dims=True,
        model_kwargs=dict(dynamic_img_size=True)),
    neck=dict(in_channels=384))
