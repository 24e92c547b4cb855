# PMSN on iNaturalist 2018, ViT-S/16 (paper App. F, Tables 2-3): global batch
# 4096 (32 GPUs x 128), 8142 prototypes, lambda 5, mask 0.15, 1 random + 10
# focal views, AdamW, wd 0.04 -> 0.4, clip 3. Uniform prior = MSN. The lr
# (official 1e-3, not scaled with the batch) is for this global batch.
_base_ = [
    '../_base_/models/pmsn_vit-small-p16.py',
    '../_base_/datasets/inat18_msn.py',
    '../_base_/schedules/adamw_msn_300e.py',
    '../_base_/default_runtime.py',
]
train_dataloader = dict(batch_size=128)
model = dict(
    head=dict(
        num_prototypes=8142,
        prior=dict(type='UniformPrior'),
        loss=dict(prior_weight=5.0)),
    mask_ratio=0.15)
auto_scale_lr = dict(base_batch_size=4096)
default_hooks = dict(checkpoint=dict(interval=10, max_keep_ckpts=3))
