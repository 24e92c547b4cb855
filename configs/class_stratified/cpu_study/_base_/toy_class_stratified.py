# Shared by the CPU class-stratified study (paper §4 on the offline toy set):
# batches drawn by ClassStratifiedSampler over the 10 background classes
# (label='background'), K = 10 (class-balanced: 6 images of every class in a
# batch of 60) or K = 2 (class-imbalanced: 30 images of 2 classes). Every
# method trains 300 iterations with AdamW and the same schedule, then the val
# loop reports k-NN top-1 on the digit and the background labels
# (knn_digit/top1, knn_background/top1 in the log and vis_data/scalars.json).
# Each job takes a few minutes on 2 CPU cores.
_base_ = [
    '../../../_base_/datasets/power_law_overlay.py',
    '../../../_base_/default_runtime.py',
]

batch_size = 60
max_iters = 300
warmup_iters = 30

# gray images replicated to 3 channels, normalised with the toy statistics
toy_preprocessor = dict(
    type='SelfSupDataPreprocessor',
    mean={{_base_.data_preprocessor.mean}},
    std={{_base_.data_preprocessor.std}},
    to_rgb=False)

# one augmented view (RandomResizedCrop keeps >= half of the image, as in the
# paper's toy setting, so the top-left digit usually survives)
view_pipeline = [
    dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1.0)),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[dict(type='ColorJitter', brightness=0.4, contrast=0.4)],
        prob=0.8),
]

train_dataloader = dict(
    batch_size=batch_size,
    drop_last=True,
    sampler=dict(
        _delete_=True,
        type='ClassStratifiedSampler',
        shuffle=True,
        classes_per_batch=10,
        batch_size=batch_size),
    dataset=dict(split='train', num_samples=5000, label='background'))

val_dataloader = _base_.knn_val_dataloader
val_evaluator = _base_.knn_val_evaluator
val_cfg = dict(type='FeatureValLoop')

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.05),
    paramwise_cfg=dict(norm_decay_mult=0.0, bias_decay_mult=0.0))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.01, by_epoch=False, begin=0,
         end=warmup_iters),
    dict(type='CosineAnnealingLR', T_max=max_iters - warmup_iters,
         by_epoch=False, begin=warmup_iters, end=max_iters),
]
train_cfg = dict(
    type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=50),
    checkpoint=dict(type='CheckpointHook', interval=max_iters, by_epoch=False,
                    max_keep_ckpts=1, save_best='knn_background/top1',
                    rule='greater'))
log_processor = dict(by_epoch=False)
