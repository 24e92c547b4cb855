# MSN's recipe: AdamW, 15 warmup epochs then cosine lr, weight decay
# increased 0.04 -> 0.4 (cosine), gradient clipping 3.0, no weight decay on
# prototypes, biases and norms. lr 1e-3 is for a global batch of 1024
# (`--auto-scale-lr` rescales it). The EMA momentum schedule (0.996 -> 1.0
# over 1.25x the run, as in MSN) is the model's own (PMSN target_momentum,
# target_momentum_end); the sharpening T is the loss's constant 0.25.
max_epochs = 300
warmup_epochs = 15
optim_wrapper = dict(
    type='OptimWrapper',
    # the EMA target (frozen) stays out of the param groups, unlogged
    constructor='SkipFrozenOptimWrapperConstructor',
    optimizer=dict(type='AdamW', lr=1e-3, betas=(0.9, 0.999),
                   weight_decay=0.04),
    clip_grad=dict(max_norm=3.0),
    paramwise_cfg=dict(
        norm_decay_mult=0.0,
        bias_decay_mult=0.0,
        custom_keys={'prototypes': dict(decay_mult=0.0)}))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.2, by_epoch=True, begin=0,
         end=warmup_epochs, convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=max_epochs - warmup_epochs,
         eta_min=1e-6, by_epoch=True, begin=warmup_epochs, end=max_epochs,
         convert_to_iter_based=True),
    dict(type='CosineAnnealingWeightDecay', eta_min=0.4, T_max=max_epochs,
         by_epoch=True, begin=0, end=max_epochs, convert_to_iter_based=True),
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs)
auto_scale_lr = dict(base_batch_size=1024, enable=False)
