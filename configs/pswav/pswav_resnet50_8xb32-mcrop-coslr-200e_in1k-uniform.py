# SwAV on ImageNet-1K through PSwAV with the uniform prior: the official
# SwAV recipe of
# ./pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform-per-sample.py (table:
# configs/recipes/pswav.yaml), with the multi-crop views drawn batched on
# the device. Deviation: the device path resizes crops with
# roi_align's averaged bilinear samples, not PIL's antialiased bilinear.
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform-per-sample.py'

# SwAV's views (2 x 224 px, scale (0.14, 1); 6 x 96 px, scale (0.05, 0.14);
# colour jitter 0.8/0.8/0.8/0.2 p 0.8, grayscale p 0.2, blur sigma 0.1-2
# p 0.5, flip) drawn batched on the device by BatchAugmentPreprocessor; the
# dataloader workers only decode.
colour_distortion = dict(
    flip_prob=0.5, jitter_prob=0.8, brightness=0.8, contrast=0.8,
    saturation=0.8, hue=0.2, grayscale_prob=0.2, blur_prob=0.5,
    blur_sigma=(0.1, 2.0))
views = [
    dict(num_views=2, size=224, scale=(0.14, 1.0), **colour_distortion),
    dict(num_views=6, size=96, scale=(0.05, 0.14), **colour_distortion),
]
train_pipeline = [
    dict(type='LoadImageForViews', views=views),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    collate_fn=dict(_delete_=True, type='padded_collate'),
    dataset=dict(pipeline=train_pipeline))
model = dict(
    data_preprocessor=dict(
        _delete_=True,
        type='BatchAugmentPreprocessor',
        views=views,
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True))
