# PMSN with a power-law prior (tau 0.5, the digits' true distribution) on the
# 32 px photo-overlay toy set, on 2 CPU cores: the toy model of
# _base_/models/pmsn_vit-mini-p4.py (the paper's toy settings at CPU scale),
# batch 64, 5k images, 1,500 iterations. After training, the val loop prints
# k-NN accuracy on the digit label and on the background label
# (knn_digit/top1, knn_background/top1).
_base_ = [
    '../_base_/models/pmsn_vit-mini-p4.py',
    '../_base_/datasets/power_law_overlay.py',
    '../_base_/default_runtime.py',
]

prior = dict(type='PowerLawPrior', tau=0.5)
max_iters = 1500
batch_size = 64
# the lr is for this batch (`--auto-scale-lr` rescales it)
auto_scale_lr = dict(base_batch_size=batch_size)

view_pipeline = [
    dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1.0)),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[
            dict(type='ModuloHueColorJitter', brightness=0.4, contrast=0.4)
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
    data_preprocessor=dict(
        type='BatchCastPreprocessor',  # the batch uploaded once
        mean={{_base_.data_preprocessor.mean}},
        std={{_base_.data_preprocessor.std}},
        to_rgb=False),
    head=dict(prior=prior))

optim_wrapper = dict(
    type='OptimWrapper',
    # the EMA target (frozen) stays out of the param groups, unlogged
    constructor='SkipFrozenOptimWrapperConstructor',
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
