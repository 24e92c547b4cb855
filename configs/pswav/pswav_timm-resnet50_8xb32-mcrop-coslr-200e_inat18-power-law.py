# PSwAV with timm's ResNet-50 (random init, pretrained=False): the iNat18
# power-law config (./pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-power-
# law.py, SwAV's recipe) with the encoder taken from timm
# (docs/backbones.md). PooledTIMMBackbone global-average-pools; it returns
# (B, 2048, 1, 1) for mmpretrain's SwAVNeck, which average-pools a map.
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-power-law.py'
model = dict(
    backbone=dict(
        _delete_=True,
        type='PooledTIMMBackbone',
        model_name='resnet50',
        pretrained=False,
        keep_spatial_dims=True))
