# ImageNet with MSN's views (paper App. E/F: target + 1 random view at 224 px,
# 10 focal views at 96 px), drawn batched on the model's device by
# BatchAugmentPreprocessor: the dataloader workers only decode
# (LoadImageForViews: JPEGs large enough are decoded at 1/2-1/8 scale when
# every crop keeps its output resolution) and padded_collate packs the images
# of mixed sizes. Per image and view: random resized crop in the image's own
# coordinates, flip, colour jitter (brightness 0.4, contrast 0.4, saturation
# 0.4, hue 0.1 = official ColorJitter(0.8s, 0.8s, 0.8s, 0.2s) with
# color_jitter_strength s = 0.5; random order, p 0.8), grayscale p 0.2, Gaussian blur sigma
# 0.1-2 p 0.5 -- the distributions of the per-sample pipeline of
# ./imagenet_msn_per-sample.py (and of official MSN).
dataset_type = 'ImageNet'
data_root = 'data/imagenet/'
num_random_views = 1
num_focal_views = 10
colour_distortion = dict(
    flip_prob=0.5,
    jitter_prob=0.8,
    brightness=0.4,
    contrast=0.4,
    saturation=0.4,
    hue=0.1,
    grayscale_prob=0.2,
    blur_prob=0.5,
    blur_sigma=(0.1, 2.0))
# order: target, random views, focal views (see pmsn_mm PMSN)
views = [
    dict(num_views=1 + num_random_views, size=224, scale=(0.3, 1.0),
         **colour_distortion),
    dict(num_views=num_focal_views, size=96, scale=(0.05, 0.3),
         **colour_distortion),
]
data_preprocessor = dict(
    type='BatchAugmentPreprocessor',
    views=views,
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    to_rgb=True)
train_pipeline = [
    dict(type='LoadImageForViews', views=views),
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
    collate_fn=dict(type='padded_collate'),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='train',
        pipeline=train_pipeline))
