# 300 iterations of AdamW (lr 1e-3, weight decay 0.05, none on norms and
# biases), 30 warm-up iterations then cosine: the CPU class-stratified study's
# schedule, identical for every method. kNN at the last iteration; the
# checkpoint with the best background kNN (the label that defines the
# batches) is kept. Inherits the default runtime (it sets how often this
# short run logs and saves).
_base_ = '../default_runtime.py'

max_iters = 300
warmup_iters = 30

optim_wrapper = dict(
    type='OptimWrapper',
    # frozen modules (EMA targets) stay out of the param groups, unlogged
    constructor='SkipFrozenOptimWrapperConstructor',
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
