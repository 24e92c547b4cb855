# ImageNet-1K for linear probing (paper App. E.2): the transforms of VISSL's
# imagenet1k config (RandomResizedCrop 224 + flip; test: resize 256, center
# crop 224; ViT probes: bicubic). mmpretrain's ImageNet dataset: data/imagenet holds train/, val/
# and meta/{train,val}.txt.
dataset_type = 'ImageNet'
data_root = 'data/imagenet'
num_classes = 1000
data_preprocessor = dict(
    num_classes=num_classes,
    # ImageNet statistics (VISSL normalises every dataset with them), RGB
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    to_rgb=True)

train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='RandomResizedCrop', scale=224, backend='pillow'),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='PackInputs'),
]
test_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='ResizeEdge', scale=256, edge='short', backend='pillow'),
    dict(type='CenterCrop', crop_size=224),
    dict(type='PackInputs'),
]
# ViT probes: the same with bicubic interpolation (VISSL's models/vit_b16.yaml
# for imagenet1k, inaturalist18 and places205: interpolation 3); the ViT
# benchmark configs select them (KITTI/Dist's ViT probes keep the above)
vit_train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='RandomResizedCrop', scale=224, backend='pillow',
         interpolation='bicubic'),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='PackInputs'),
]
vit_test_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='ResizeEdge', scale=256, edge='short', backend='pillow',
         interpolation='bicubic'),
    dict(type='CenterCrop', crop_size=224),
    dict(type='PackInputs'),
]

train_dataloader = dict(
    batch_size=32,
    num_workers=5,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='train',
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=32,
    num_workers=5,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='val',
        pipeline=test_pipeline))
# one top-1 (and top-5 when there are >= 5 classes) per linear probe
val_evaluator = dict(type='MultiHeadAccuracy', topk=(1, 5))
test_dataloader = val_dataloader
test_evaluator = val_evaluator
