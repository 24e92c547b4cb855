# PMSN on ImageNet-1K, ViT-B/16 (paper Table 3, bottom; App. E.1 MSN recipe):
# global batch 1024 (16 GPUs x 64), 1024 prototypes, lambda 1, mask 0.5,
# 1 random + 10 focal views. Uniform prior = MSN.
_base_ = [
    '../_base_/models/pmsn_vit-small-p16.py',
    '../_base_/datasets/imagenet_msn.py',
    '../_base_/schedules/adamw_msn_300e.py',
    '../_base_/default_runtime.py',
]
train_dataloader = dict(batch_size=64)
model = dict(
    backbone=dict(arch='base', drop_path_rate=0.0),
    neck=dict(in_channels=768),
    head=dict(num_prototypes=1024, loss=dict(prior_weight=1.0)),
    mask_ratio=0.5)
default_hooks = dict(checkpoint=dict(interval=10, max_keep_ckpts=3))
