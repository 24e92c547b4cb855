# CPU study, SimCLR: a CIFAR ResNet-18 at 1/4 width (16 base channels),
# 2 views, 2-layer projector to 64-d, temperature 0.1; class-balanced (K=10).
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
    type='SyncFreeSimCLR',
    data_preprocessor={{_base_.toy_preprocessor}},
    backbone=dict(type='ResNet_CIFAR', depth=18, stem_channels=16,
                  base_channels=16, zero_init_residual=True),
    neck=dict(type='NonLinearNeck', in_channels=128, hid_channels=256,
              out_channels=64, num_layers=2, with_avg_pool=True),
    head=dict(type='ContrastiveHead', loss=dict(type='CrossEntropyLoss'),
              temperature=0.1))
