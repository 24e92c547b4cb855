# CPU study, VICReg: a CIFAR ResNet-18 at 1/4 width (16 base channels),
# 2 views, 512-512-512 expander (8.5x the batch of 60, as 8192 is 8x the
# paper's batch of 1024), loss weights 25 / 25 / 1; class-balanced (K=10).
_base_ = [
    '../../_base_/datasets/power_law_overlay_class_stratified.py',
    '../../_base_/schedules/adamw_300iter_toy.py',
]

train_dataloader = dict(dataset=dict(pipeline=[
    dict(type='MultiView', num_views=2,
         transforms=[{{_base_.view_pipeline}}]),
    dict(type='PackInputs'),
]))

model = dict(
    type='VICReg',
    data_preprocessor={{_base_.toy_preprocessor}},
    backbone=dict(type='ResNet_CIFAR', depth=18, stem_channels=16,
                  base_channels=16, zero_init_residual=True),
    neck=dict(type='NonLinearNeck', in_channels=128, hid_channels=512,
              out_channels=512, num_layers=3, with_bias=True,
              with_last_bn=False, with_last_bias=False, with_avg_pool=True,
              norm_cfg=dict(type='BN1d')),
    loss=dict(type='VICRegLoss', invariance_weight=25.0,
              variance_weight=25.0, covariance_weight=1.0))
