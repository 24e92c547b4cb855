# Paper toy setting (§5.1, App. F): ViT-Tiny/4 on grayscaled CIFAR-10 with a
# power-law (tau 0.5) MNIST digit, batch 1024 (8 GPUs x 128), 300 epochs,
# 10 prototypes, lambda 100, mask 0.05, 1 random view and no focal view,
# RRC scale (0.5, 1.0), no blur, no gradient clipping (configs/recipes/toy.yaml:
# every value's source; saturation, hue and grayscale are left out, being
# identities on grayscale images). Data from disk:
#   data/cifar10/cifar-10-batches-py/, data/mnist/*-ubyte
_base_ = [
    '../_base_/models/pmsn_vit-small-p16.py',
    '../_base_/datasets/power_law_overlay.py',
    '../_base_/schedules/adamw_msn_300e.py',
    '../_base_/default_runtime.py',
]
view_pipeline = [
    dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1.0),
         backend='pillow'),  # official: torchvision on PIL images
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[dict(type='ModuloHueColorJitter', brightness=0.4, contrast=0.4)],
        prob=0.8),
]
train_dataloader = dict(
    batch_size=128,
    num_workers=4,
    drop_last=True,
    dataset=dict(
        num_samples=None,  # every CIFAR-10 training image once
        background_source='cifar10',
        background_root='data/cifar10',
        digit_source='mnist',
        digit_root='data/mnist',
        pipeline=[
            dict(type='MultiView', num_views=[1, 1],
                 transforms=[view_pipeline, view_pipeline]),
            dict(type='PackInputs'),
        ]))
model = dict(
    data_preprocessor=dict(
        type='BatchCastPreprocessor',  # the batch uploaded once
        mean=[122.0, 122.0, 122.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=False),
    backbone=dict(arch='deit-tiny', img_size=32, patch_size=4),
    neck=dict(in_channels=192),
    head=dict(
        num_prototypes=10,
        prior=dict(_delete_=True, type='PowerLawPrior', tau=0.5),
        loss=dict(prior_weight=100.0)),
    mask_ratio=0.05)
optim_wrapper = dict(clip_grad=None)
