# CPU study, MAE: a 4-layer ViT (dim 96, patch 4) encoder, a 2-layer
# decoder (dim 64), mask ratio 0.75, normalised-pixel L2 loss; one view with
# crop + flip (MAE's augmentation); class-balanced (K=10).
_base_ = [
    '../../_base_/datasets/power_law_overlay_class_stratified.py',
    '../../_base_/schedules/adamw_300iter_toy.py',
]

train_dataloader = dict(dataset=dict(pipeline=[
    dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1.0)),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackInputs'),
]))

model = dict(
    type='MAE',
    data_preprocessor={{_base_.toy_preprocessor}},
    backbone=dict(
        type='MAEViT',
        arch=dict(embed_dims=96, num_layers=4, num_heads=3,
                  feedforward_channels=384),
        img_size=32, patch_size=4, mask_ratio=0.75,
        out_type='cls_token'),
    neck=dict(
        type='MAEPretrainDecoder', num_patches=64, patch_size=4, in_chans=3,
        embed_dim=96, decoder_embed_dim=64, decoder_depth=2,
        decoder_num_heads=2, mlp_ratio=4),
    head=dict(type='MAEPretrainHead', norm_pix=True, patch_size=4,
              loss=dict(type='PixelReconstructionLoss', criterion='L2')),
    init_cfg=[
        dict(type='Xavier', layer='Linear', distribution='uniform'),
        dict(type='Constant', layer='LayerNorm', val=1.0, bias=0.0)
    ])
optim_wrapper = dict(
    optimizer=dict(betas=(0.9, 0.95)),
    paramwise_cfg=dict(custom_keys={
        'pos_embed': dict(decay_mult=0.0),
        'mask_token': dict(decay_mult=0.0),
        'cls_token': dict(decay_mult=0.0)
    }))
