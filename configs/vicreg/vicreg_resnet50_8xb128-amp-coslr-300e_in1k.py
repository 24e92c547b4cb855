# VICReg, ResNet-50 on ImageNet-1K: the paper's App. E.1 recipe of
# ./vicreg_resnet50_8xb128-amp-coslr-300e_in1k-per-sample.py, with the two
# asymmetric views (official augmentations.TrainTransform) drawn batched on
# the device by BatchAugmentPreprocessor; the dataloader workers only decode.
# Both views: random resized crop 224 (scale 0.08-1), flip, colour jitter
# 0.4/0.4/0.2/0.1 p 0.8, grayscale p 0.2; view a: blur p 1.0; view b: blur
# p 0.1, solarize p 0.2. Deviation: the official crop resizes with PIL's
# bicubic filter; the device path with roi_align's averaged bilinear
# samples.
_base_ = './vicreg_resnet50_8xb128-amp-coslr-300e_in1k-per-sample.py'

device_view = dict(
    size=224, scale=(0.08, 1.0), flip_prob=0.5, jitter_prob=0.8,
    brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1,
    grayscale_prob=0.2, blur_sigma=(0.1, 2.0))
views = [
    dict(num_views=1, blur_prob=1.0, **device_view),
    dict(num_views=1, blur_prob=0.1, solarize_prob=0.2, **device_view),
]
train_pipeline = [
    dict(type='LoadImageForViews', views=views),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    collate_fn=dict(type='padded_collate'),
    dataset=dict(pipeline=train_pipeline))
model = dict(
    data_preprocessor=dict(
        _delete_=True,
        type='BatchAugmentPreprocessor',
        views=views,
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True))
