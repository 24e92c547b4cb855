# CIFAR-100 for linear probing (paper App. E.2): the transforms of VISSL's
# cifar100 config (resize 224 + flip; test: resize 224; ViT probes: see
# vit_*_pipeline). data/cifar100 holds cifar-100-python/ (read from disk,
# never downloaded).
dataset_type = 'CIFAR100Sorted'
data_root = 'data/cifar100'
num_classes = 100
data_preprocessor = dict(
    num_classes=num_classes,
    # ImageNet statistics (VISSL normalises every dataset with them), RGB
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    to_rgb=False)

# images are in-memory RGB arrays (no LoadImageFromFile)
train_pipeline = [
    dict(type='ResizeEdge', scale=224, edge='short', backend='pillow'),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='PackInputs'),
]
test_pipeline = [
    dict(type='ResizeEdge', scale=224, edge='short', backend='pillow'),
    dict(type='PackInputs'),
]
# ViT probes: VISSL's cifar100/models/vit_b16.yaml replaces the transforms
# with ImageNet's, bicubic (RandomResizedCrop 224 + flip; test: resize 256,
# center crop 224); the ViT benchmark configs select them
vit_train_pipeline = [
    dict(type='RandomResizedCrop', scale=224, backend='pillow',
         interpolation='bicubic'),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='PackInputs'),
]
vit_test_pipeline = [
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
        split='test',
        pipeline=test_pipeline))
# one top-1 (and top-5 when there are >= 5 classes) per linear probe
val_evaluator = dict(type='MultiHeadAccuracy', topk=(1, 5))
test_dataloader = val_dataloader
test_evaluator = val_evaluator
