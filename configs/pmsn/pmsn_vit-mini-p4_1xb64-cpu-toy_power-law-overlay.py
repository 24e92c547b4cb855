# The README's main job: PMSN with a power-law prior (tau 0.5, the digits'
# true distribution) on the offline toy set, on 2 CPU cores in <= 10 minutes.
# After training, the val loop prints k-NN accuracy on the digit label and on
# the background label (knn_digit/top1, knn_background/top1).
# Paper toy settings kept: 10 prototypes, lambda 100, mask 0.05, 1 random
# view and no focal view, RRC scale (0.5, 1.0), no blur, T 0.1, sharpen 0.25.
# Scaled down for CPU: a 4-layer ViT (dim 96, patch 4) instead of ViT-Tiny/4,
# batch 64, a 512-512-128 projector, 5k images, a short schedule.
_base_ = [
    '../_base_/datasets/power_law_overlay.py',
    '../_base_/default_runtime.py',
]

num_prototypes = 10
prior = dict(type='PowerLawPrior', tau=0.5)
max_iters = 1500
batch_size = 64

view_pipeline = [
    dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1.0)),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[
            dict(type='ColorJitter', brightness=0.4, contrast=0.4)
        ],
        prob=0.8),
]
train_pipeline = [
    # [target, 1 random anchor view]; no focal views in the toy setting
    dict(type='MultiView', num_views=[1, 1],
         transforms=[view_pipeline, view_pipeline]),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    batch_size=batch_size,
    drop_last=True,
    dataset=dict(split='train', num_samples=5000, pipeline=train_pipeline))

val_dataloader = _base_.knn_val_dataloader
val_evaluator = _base_.knn_val_evaluator
val_cfg = dict(type='FeatureValLoop')

model = dict(
    type='PMSN',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean={{_base_.data_preprocessor.mean}},
        std={{_base_.data_preprocessor.std}},
        to_rgb=False),
    backbone=dict(
        type='MSNViT',
        arch=dict(
            embed_dims=96, num_layers=4, num_heads=3,
            feedforward_channels=384),
        img_size=32,
        patch_size=4,
        drop_path_rate=0.0),
    neck=dict(
        type='MSNProjector',
        in_channels=96,
        hidden_channels=512,
        out_channels=128),
    head=dict(
        type='PMSNHead',
        num_prototypes=num_prototypes,
        in_channels=128,
        temperature=0.1,
        prior=prior,
        loss=dict(
            type='PMSNLoss',
            sharpen_temperature=0.25,
            prior_weight=100.0)),
    num_random_views=1,
    mask_ratio=0.05,
    target_momentum=0.996)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.04),
    paramwise_cfg=dict(
        norm_decay_mult=0.0,
        bias_decay_mult=0.0,
        custom_keys={'prototypes': dict(decay_mult=0.0)}))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.01, by_epoch=False, begin=0,
         end=100),
    dict(type='CosineAnnealingLR', T_max=max_iters - 100, by_epoch=False,
         begin=100, end=max_iters),
    # MSN: weight decay 0.04 -> 0.4 (cosine); groups at 0 stay at 0
    dict(type='CosineAnnealingWeightDecay', eta_min=0.4, T_max=max_iters,
         by_epoch=False, begin=0, end=max_iters),
]
train_cfg = dict(
    type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=50),
    checkpoint=dict(type='CheckpointHook', interval=500, by_epoch=False,
                    max_keep_ckpts=1, save_best='knn_digit/top1',
                    rule='greater'))
log_processor = dict(by_epoch=False)
