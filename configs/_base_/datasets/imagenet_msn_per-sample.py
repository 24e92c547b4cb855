# ImageNet with MSN's multi-view pipeline drawn per sample in the dataloader
# workers (mmpretrain's transforms): [target, 1 random view] at 224 px and 10
# focal views at 96 px (paper App. E/F: 1 random + 10 focal views). The
# shipped configs use ./imagenet_msn.py (the same views drawn batched on the
# device; the workers only decode); inherit this file instead for the
# per-sample pipeline.
dataset_type = 'ImageNet'
data_root = 'data/imagenet/'
data_preprocessor = dict(
    type='BatchCastPreprocessor',  # the batch uploaded once
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    to_rgb=True)

color_distortion = [
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[
            dict(
                type='ModuloHueColorJitter',
                brightness=0.4,
                contrast=0.4,
                saturation=0.4,
                hue=0.1)
        ],
        prob=0.8),
    dict(
        type='RandomGrayscale',
        prob=0.2,
        keep_channels=True,
        channel_weights=(0.114, 0.587, 0.2989)),
    dict(
        type='GaussianBlur',
        magnitude_range=(0.1, 2.0),
        magnitude_std='inf',
        prob=0.5),
]
random_view = [
    dict(type='RandomResizedCrop', scale=224, crop_ratio_range=(0.3, 1.0),
         backend='pillow'),
    *color_distortion,
]
focal_view = [
    dict(type='RandomResizedCrop', scale=96, crop_ratio_range=(0.05, 0.3),
         backend='pillow'),
    *color_distortion,
]
num_random_views = 1
num_focal_views = 10
train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    # order: target, random views, focal views (see pmsn_mm PMSN)
    dict(
        type='MultiView',
        num_views=[1, num_random_views, num_focal_views],
        transforms=[random_view, random_view, focal_view]),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    batch_size=64,
    num_workers=8,
    persistent_workers=True,
    # pinned batches: the step's one upload is asynchronous on a GPU
    pin_memory=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='train',
        pipeline=train_pipeline))
