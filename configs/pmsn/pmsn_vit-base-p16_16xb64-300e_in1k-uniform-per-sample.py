# PMSN (uniform prior = MSN) on ImageNet-1K as
# ./pmsn_vit-base-p16_16xb64-300e_in1k-uniform.py, with MSN's 12 views drawn
# per sample in the dataloader workers (mmpretrain's transforms,
# _base_/datasets/imagenet_msn_per-sample.py) instead of batched on the
# device: the same distributions, at many times the loader CPU time of a
# plain decode (tools/speed/benchmark_pipeline.py).
_base_ = [
    '../_base_/models/pmsn_vit-base-p16.py',
    '../_base_/datasets/imagenet_msn_per-sample.py',
    '../_base_/schedules/adamw_msn_300e.py',
    '../_base_/default_runtime.py',
]
train_dataloader = dict(batch_size=64)
default_hooks = dict(checkpoint=dict(interval=10, max_keep_ckpts=3))
