# PMSN with a ViT-B/16 (MSN's ImageNet architecture): the ViT-S/16 model of
# ./pmsn_vit-small-p16.py with the base arch, 1024 prototypes, lambda 1 and
# patch-drop 0.5 (paper App. E.1).
_base_ = './pmsn_vit-small-p16.py'
model = dict(
    backbone=dict(arch='base', drop_path_rate=0.0),
    neck=dict(in_channels=768),
    head=dict(num_prototypes=1024, loss=dict(prior_weight=1.0)),
    mask_ratio=0.5)
