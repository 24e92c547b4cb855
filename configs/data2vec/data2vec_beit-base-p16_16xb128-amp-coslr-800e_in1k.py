# data2vec (vision), ViT-B/16 on ImageNet-1K: the paper's App. E.1 recipe,
# i.e. the released ViT-B command of facebookresearch/data2vec_vision (beit/
# README.md; run_cyclical.py, engine_for_cyclical.py, datasets.py; table:
# configs/recipes/data2vec_class_stratified.yaml): global batch 2048 (16 GPUs
# x 128), 800 epochs, AdamW (betas 0.9/0.999) lr 2e-3 with 10 linear warm-up
# epochs then cosine to 1e-5, weight decay 0.05 (constant; none on 1-D
# parameters, the class token and the position embedding), gradient
# clipping 3.0, drop path 0.25, attention dropout 0.05, layer scale 1e-4,
# shared relative position bias, targets = layer-normed average of the
# layer-normed outputs of blocks 6..11, smooth-L1 (beta 2), 120 of 196
# patches block-masked (16..196 per block), EMA momentum 0.9998 (constant),
# one view: colour jitter 0.4/0.4/0.4, flip, crop 224 (scale 0.08-1,
# bicubic), mixed precision (the official code autocasts too).
# Deviation: the official warm-up starts at lr 0 (cosine_scheduler's
# start_warmup_value; run_cyclical.py never passes its --warmup_lr);
# mmengine's LinearLR cannot (its chained update divides by the start
# factor), so it starts at 1e-9 x lr.
_base_ = '../_base_/default_runtime.py'

dataset_type = 'ImageNet'
data_root = 'data/imagenet/'
batch_size = 128  # per GPU
max_epochs = 800
warmup_epochs = 10
lr = 2e-3

# the batch uploaded once, the masks with it (stacked by the collate)
data_preprocessor = dict(
    type='BatchCastPreprocessor',
    sample_keys=['mask'],
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    to_rgb=True)

train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='ModuloHueColorJitter', brightness=0.4, contrast=0.4, saturation=0.4),
    dict(type='RandomFlip', prob=0.5),
    dict(type='RandomResizedCrop', scale=224, backend='pillow',
         interpolation='bicubic'),
    dict(
        type='BEiTMaskGenerator',
        input_size=(14, 14),
        num_masking_patches=120,
        min_num_patches=16,
        max_num_patches=196),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    batch_size=batch_size,
    num_workers=10,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='padded_collate', sample_keys=['mask']),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='train',
        pipeline=train_pipeline))

model = dict(
    type='Data2VecVision',
    data_preprocessor=data_preprocessor,
    backbone=dict(
        type='Data2VecViT',
        arch='base',
        patch_size=16,
        drop_path_rate=0.25,
        layer_scale_init_value=1e-4,
        use_abs_pos_emb=False,
        use_shared_rel_pos_bias=True,
        layer_cfgs=dict(attn_drop_rate=0.05),
        init_cfg=[
            dict(type='TruncNormal', std=0.02, layer='Linear'),
            dict(type='TruncNormal', std=0.02, layer='Conv2d'),
            dict(type='Constant', layer='LayerNorm', val=1.0, bias=0.0)
        ]),
    # the official regression head `lm_head`: one Linear on final tokens
    neck=dict(
        type='LinearNeck',
        in_channels=768,
        out_channels=768,
        norm_cfg=None,
        init_cfg=dict(type='TruncNormal', std=0.02, layer='Linear',
                      bias=0.0)),
    target_layers=[6, 7, 8, 9, 10, 11],
    target_layer_norm='layer',
    target_post_norm='layer',
    loss_type='smooth_l1',
    loss_beta=2.0,
    # official: ema_decay 0.9998 with ema_start_at 0, i.e. constant (set
    # target_momentum_end for a linear schedule over 1.25x the run)
    target_momentum=0.9998)

# no weight decay on 1-D parameters (biases, norms, layer scales), the class
# token and the position embedding, as the official BEiT optimiser factory
optim_wrapper = dict(
    # mixed precision written here, the same on any machine: bf16 autocast
    # without a loss scaler ("bfloat16 has float32's exponent range, so
    # gradients do not underflow and need no scaling", pmsn_mm's wrapper;
    # mmengine's AmpOptimWrapper would run fp16 and refuses a CPU)
    type='DeviceAwareAmpOptimWrapper',
    dtype='bfloat16',
    loss_scale='dynamic',
    # the EMA teacher (frozen) stays out of the param groups, unlogged
    constructor='SkipFrozenOptimWrapperConstructor',
    optimizer=dict(
        type='AdamW', lr=lr, betas=(0.9, 0.999), weight_decay=0.05),
    clip_grad=dict(max_norm=3.0),
    paramwise_cfg=dict(
        flat_decay_mult=0.0,
        bias_decay_mult=0.0,
        custom_keys={
            'cls_token': dict(decay_mult=0.0),
            'pos_embed': dict(decay_mult=0.0),
        }))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-9, by_epoch=True, begin=0,
         end=warmup_epochs, convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=max_epochs - warmup_epochs,
         eta_min=1e-5, by_epoch=True, begin=warmup_epochs, end=max_epochs,
         convert_to_iter_based=True),
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs)
default_hooks = dict(checkpoint=dict(interval=10, max_keep_ckpts=3))
randomness = dict(seed=0, diff_rank_seed=True)
auto_scale_lr = dict(base_batch_size=2048, enable=False)
