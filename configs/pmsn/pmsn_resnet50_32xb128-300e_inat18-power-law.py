# PMSN with a ResNet-50 (mmpretrain's) instead of the ViT-S/16: the paper's
# iNat18 power-law recipe (./pmsn_vit-small-p16_32xb128-300e_inat18-power-
# law.py, App. F.1.2 and Table 3) with only the encoder swapped
# (docs/backbones.md). MSNProjector average-pools the (B, 2048, 7, 7) map.
# A ResNet has no patch tokens to drop: mask_ratio 0 (MSN's masking of the
# random view is off; the views and everything else are the recipe's).
_base_ = './pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'
model = dict(
    backbone=dict(_delete_=True, type='ResNet', depth=50),
    neck=dict(in_channels=2048),
    mask_ratio=0.0)
