# CPU study, MSN (PMSN with the uniform prior): the toy PMSN model
# (_base_/models/pmsn_vit-mini-p4.py: 4-layer ViT, dim 96, patch 4; 10
# prototypes, lambda 100, mask 0.05, 1 random view, no focal view);
# class-balanced (K=10).
_base_ = [
    '../../_base_/models/pmsn_vit-mini-p4.py',
    '../../_base_/datasets/power_law_overlay_class_stratified.py',
    '../../_base_/schedules/adamw_300iter_toy.py',
]

train_dataloader = dict(dataset=dict(pipeline=[
    # [target, 1 random anchor view]
    dict(type='MultiView', num_views=[1, 1],
         transforms=[{{_base_.view_pipeline}}, {{_base_.view_pipeline}}]),
    dict(type='PackInputs'),
]))

model = dict(data_preprocessor={{_base_.toy_preprocessor}})

optim_wrapper = dict(
    paramwise_cfg=dict(custom_keys={'prototypes': dict(decay_mult=0.0)}))
