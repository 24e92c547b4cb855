# MSN's optimisation (official msn_train.py init_opt + configs/pretrain/
# msn_vits16.yaml; sources in configs/recipes/*.yaml): AdamW, lr 2e-4 -> 1e-3
# linearly over 15 warm-up epochs, then a cosine towards 1e-6; weight decay
# 0.04 -> 0.4 along a cosine; gradient clipping 3.0; no weight decay on
# prototypes, biases and norms. Both cosines, as the EMA momentum schedule
# (PMSN target_momentum -> target_momentum_end), span 1.25x the run
# (T_max = int(1.25 * epochs * iterations_per_epoch)): the run ends before
# they do, at lr ~1.5e-4 and weight decay ~0.35. The lr is not scaled with
# the batch in the official code: set `auto_scale_lr.base_batch_size` to the
# config's own global batch.
max_epochs = 300
warmup_epochs = 15
schedule_epochs = 1.25 * max_epochs  # where the cosines would end
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
    dict(type='CosineAnnealingLR', T_max=schedule_epochs - warmup_epochs,
         eta_min=1e-6, by_epoch=True, begin=warmup_epochs, end=max_epochs,
         convert_to_iter_based=True),
    dict(type='CosineAnnealingWeightDecay', eta_min=0.4,
         T_max=schedule_epochs, by_epoch=True, begin=0, end=max_epochs,
         convert_to_iter_based=True),
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs)
auto_scale_lr = dict(base_batch_size=1024, enable=False)
