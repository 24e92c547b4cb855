# PMSN on ImageNet-1K, ViT-B/16 (paper Table 3, bottom; App. E.1 MSN recipe):
# global batch 1024 (16 GPUs x 64), 1024 prototypes, lambda 1, mask 0.5,
# 1 random + 10 focal views drawn batched on the device (the workers only
# decode; ./pmsn_vit-base-p16_16xb64-300e_in1k-uniform-per-sample.py draws
# them in the workers). Uniform prior = MSN.
_base_ = [
    '../_base_/models/pmsn_vit-base-p16.py',
    '../_base_/datasets/imagenet_msn.py',
    '../_base_/schedules/adamw_msn_300e.py',
    '../_base_/default_runtime.py',
]
train_dataloader = dict(batch_size=64)
default_hooks = dict(checkpoint=dict(interval=10, max_keep_ckpts=3))
