# CPU study, MSN (PMSN with the uniform prior): the toy PMSN model of
# configs/pmsn (4-layer ViT, dim 96, patch 4; 10 prototypes, lambda 100,
# mask 0.05, 1 random view, no focal view); class-balanced (K=10).
_base_ = './_base_/toy_class_stratified.py'

train_dataloader = dict(dataset=dict(pipeline=[
    # [target, 1 random anchor view]
    dict(type='MultiView', num_views=[1, 1],
         transforms=[{{_base_.view_pipeline}}, {{_base_.view_pipeline}}]),
    dict(type='PackInputs'),
]))

model = dict(
    type='PMSN',
    data_preprocessor={{_base_.toy_preprocessor}},
    backbone=dict(
        type='MSNViT',
        arch=dict(embed_dims=96, num_layers=4, num_heads=3,
                  feedforward_channels=384),
        img_size=32, patch_size=4, drop_path_rate=0.0),
    neck=dict(type='MSNProjector', in_channels=96, hidden_channels=512,
              out_channels=128),
    head=dict(
        type='PMSNHead',
        num_prototypes=10,
        in_channels=128,
        temperature=0.1,
        prior=dict(type='UniformPrior'),
        loss=dict(type='PMSNLoss', sharpen_temperature=0.25,
                  prior_weight=100.0)),
    num_random_views=1,
    mask_ratio=0.05,
    target_momentum=0.996)

optim_wrapper = dict(
    paramwise_cfg=dict(custom_keys={'prototypes': dict(decay_mult=0.0)}))
