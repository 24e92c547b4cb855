# CPU study, data2vec: a 4-layer BEiT ViT (dim 96, patch 4) student; the EMA
# teacher's blocks [2, 3] (the top half, as 6..11 of ViT-B's 12) are the
# targets; 39 of 64 patches block-masked (the official 120 / 196); one view;
# class-balanced (K=10). The EMA follows the toy MSN schedule (0.996 -> 1)
# since the official 0.9998 would barely move the teacher in 300 iterations.
_base_ = [
    '../../_base_/datasets/power_law_overlay_class_stratified.py',
    '../../_base_/schedules/adamw_300iter_toy.py',
]

train_dataloader = dict(
    collate_fn=dict(type='padded_collate', sample_keys=['mask']),
    dataset=dict(pipeline=[
        dict(type='RandomResizedCrop', scale=32,
             crop_ratio_range=(0.5, 1.0)),
        dict(type='RandomFlip', prob=0.5),
        dict(
            type='RandomApply',
            transforms=[
                dict(type='ModuloHueColorJitter', brightness=0.4, contrast=0.4)
            ],
            prob=0.8),
        dict(type='BEiTMaskGenerator', input_size=(8, 8),
             num_masking_patches=39, min_num_patches=4, max_num_patches=64),
        dict(type='PackInputs'),
    ]))

model = dict(
    type='Data2VecVision',
    # the masks uploaded with the batch (stacked by the collate)
    data_preprocessor=dict(
        type='BatchCastPreprocessor', sample_keys=['mask'],
        mean={{_base_.data_preprocessor.mean}},
        std={{_base_.data_preprocessor.std}}, to_rgb=False),
    backbone=dict(
        type='Data2VecViT',
        arch=dict(embed_dims=96, num_layers=4, num_heads=3,
                  feedforward_channels=384),
        img_size=32, patch_size=4, drop_path_rate=0.0,
        layer_scale_init_value=0.1, out_type='avg_featmap',
        init_cfg=[
            dict(type='TruncNormal', std=0.02, layer='Linear'),
            dict(type='TruncNormal', std=0.02, layer='Conv2d'),
            dict(type='Constant', layer='LayerNorm', val=1.0, bias=0.0)
        ]),
    neck=dict(type='LinearNeck', in_channels=96, out_channels=96,
              norm_cfg=None,
              init_cfg=dict(type='TruncNormal', std=0.02, layer='Linear',
                            bias=0.0)),
    target_layers=[2, 3],
    loss_type='smooth_l1',
    loss_beta=2.0,
    target_momentum=0.996,
    target_momentum_end=1.0)

optim_wrapper = dict(
    clip_grad=dict(max_norm=3.0),
    paramwise_cfg=dict(flat_decay_mult=0.0, custom_keys={
        'cls_token': dict(decay_mult=0.0),
        'pos_embed': dict(decay_mult=0.0)
    }))
# the avg_featmap norm (ln2) serves evaluation only: no gradient in training
find_unused_parameters = True
