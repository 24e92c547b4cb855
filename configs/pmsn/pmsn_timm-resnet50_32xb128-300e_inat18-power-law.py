# PMSN with timm's ResNet-50 (random init, pretrained=False): the paper's
# iNat18 power-law recipe (./pmsn_vit-small-p16_32xb128-300e_inat18-power-
# law.py) with only the encoder swapped (docs/backbones.md).
# PooledTIMMBackbone returns the model's own pooled feature (global average
# pool: (B, 2048)). No patch tokens to drop: mask_ratio 0.
_base_ = './pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'
model = dict(
    backbone=dict(
        _delete_=True,
        type='PooledTIMMBackbone',
        model_name='resnet50',
        pretrained=False),
    neck=dict(in_channels=2048),
    mask_ratio=0.0)
