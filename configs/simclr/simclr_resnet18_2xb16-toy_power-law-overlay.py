# mmpretrain's SimCLR on the offline toy set: a small CPU config (also used by
# the 2-process gloo test of tools/dist_train.sh).
_base_ = [
    '../_base_/datasets/power_law_overlay.py',
    '../_base_/default_runtime.py',
]

view_pipeline = [
    dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1.0)),
    dict(
        type='RandomApply',
        transforms=[
            dict(
                type='ModuloHueColorJitter',
                brightness=0.4,
                contrast=0.4,
                saturation=0.0,
                hue=0.0)
        ],
        prob=0.8),
]
train_pipeline = [
    dict(type='MultiView', num_views=2, transforms=[view_pipeline]),
    dict(type='PackInputs'),
]
# the lr is for 2 processes x 16 images (`--auto-scale-lr` rescales it)
auto_scale_lr = dict(base_batch_size=32)
train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    batch_size=16,
    dataset=dict(num_samples=512, pipeline=train_pipeline),
    drop_last=True)

model = dict(
    type='SyncFreeSimCLR',
    data_preprocessor=dict(
        type='BatchCastPreprocessor',  # the batch uploaded once
        mean={{_base_.data_preprocessor.mean}},
        std={{_base_.data_preprocessor.std}},
        to_rgb=False),
    backbone=dict(type='ResNet_CIFAR', depth=18, zero_init_residual=True),
    neck=dict(
        type='NonLinearNeck',
        in_channels=512,
        hid_channels=512,
        out_channels=64,
        num_layers=2,
        with_avg_pool=True),
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.1),
)

optim_wrapper = dict(
    type='OptimWrapper',
    # one param group per distinct setting, AdamW fused on CUDA (pmsn_mm)
    constructor='CoalescedOptimWrapperConstructor',
    optimizer=dict(type='AdamW', lr=1e-3, weight_decay=1e-4))
param_scheduler = [dict(type='CosineAnnealingLR', T_max=20, by_epoch=False)]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=20)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=5),
    checkpoint=dict(type='CheckpointHook', interval=10, by_epoch=False))
log_processor = dict(by_epoch=False)
