# CLEVR/Count (3 to 10 objects: 8 classes) for linear probing (paper App. E.2):
# the transforms of VISSL's clevr_count config (resize to 224x224 + flip; test:
# resize to 224x224). data/clevr holds CLEVR_v1.0's images/ and scenes/;
# split='test' is CLEVR's val set.
dataset_type = 'CLEVRCount'
data_root = 'data/clevr'
num_classes = 8
data_preprocessor = dict(
    num_classes=num_classes,
    # ImageNet statistics (VISSL normalises every dataset with them), RGB
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    to_rgb=True)

train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='Resize', scale=(224, 224), backend='pillow'),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='PackInputs'),
]
test_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='Resize', scale=(224, 224), backend='pillow'),
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
# one top-1 per linear probe (VISSL's CLEVR meters: topk_values [1])
val_evaluator = dict(type='MultiHeadAccuracy', topk=(1, ))
test_dataloader = val_dataloader
test_evaluator = val_evaluator
