# PMSN with timm's ViT-S/16 (random init, pretrained=False): the paper's
# iNat18 power-law recipe (./pmsn_vit-small-p16_32xb128-300e_inat18-power-
# law.py) with the encoder taken from timm (docs/backbones.md).
# PooledTIMMBackbone returns the CLS token after the final norm (timm's
# global_pool='token'), the feature MSN projects, and drops 15% of the patch
# tokens of the random view (MSN's masking, as MSNViT);
# dynamic_img_size=True interpolates the position embedding for the 96 px
# focal views.
_base_ = './pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'
model = dict(
    backbone=dict(
        _delete_=True,
        type='PooledTIMMBackbone',
        model_name='vit_small_patch16_224',
        pretrained=False,
        model_kwargs=dict(dynamic_img_size=True, drop_path_rate=0.0)),
    neck=dict(in_channels=384))
