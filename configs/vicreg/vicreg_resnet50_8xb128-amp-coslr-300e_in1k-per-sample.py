# VICReg, ResNet-50 on ImageNet-1K: the paper's App. E.1 recipe with the
# official facebookresearch/vicreg code's defaults otherwise (main_vicreg.py,
# augmentations.py; table: configs/recipes/vicreg_class_stratified.yaml):
# global batch 1024 (8 GPUs x 128), 300 epochs, LARS (momentum 0.9, eta
# 0.001; no weight decay or adaptation on biases and BatchNorm), lr 0.2 x
# batch / 256 with 10 linear warm-up epochs then cosine to 0.001 x lr, weight
# decay 1e-6, 8192-8192-8192 expander, loss weights 25 / 25 / 1, SyncBN
# everywhere, mixed precision (the official code autocasts too). The two
# asymmetric views (bicubic crops) are drawn per sample in the dataloader
# workers (mmpretrain's transforms); the shipped
# ./vicreg_resnet50_8xb128-amp-coslr-300e_in1k.py draws the same views
# batched on the device. Deviation: the official warm-up starts at lr 0;
# mmengine's LinearLR cannot (its chained update divides by the start
# factor), so it starts at 1e-9 x lr.
_base_ = '../_base_/default_runtime.py'

dataset_type = 'ImageNet'
data_root = 'data/imagenet/'
batch_size = 128  # per GPU
max_epochs = 300
warmup_epochs = 10
lr = 0.2 * 1024 / 256

data_preprocessor = dict(
    type='BatchCastPreprocessor',  # the batch uploaded once
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    to_rgb=True)

# official augmentations.TrainTransform: two asymmetric views
common_view = [
    dict(type='RandomResizedCrop', scale=224, backend='pillow',
         interpolation='bicubic'),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[
            dict(type='ModuloHueColorJitter', brightness=0.4, contrast=0.4,
                 saturation=0.2, hue=0.1)
        ],
        prob=0.8),
    dict(type='RandomGrayscale', prob=0.2, keep_channels=True,
         channel_weights=(0.114, 0.587, 0.2989)),
]
view_a = [
    *common_view,
    dict(type='GaussianBlur', magnitude_range=(0.1, 2.0),
         magnitude_std='inf', prob=1.0),
]
view_b = [
    *common_view,
    dict(type='GaussianBlur', magnitude_range=(0.1, 2.0),
         magnitude_std='inf', prob=0.1),
    dict(type='Solarize', thr=128, prob=0.2),
]
train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='MultiView', num_views=[1, 1], transforms=[view_a, view_b]),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    batch_size=batch_size,
    num_workers=10,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='train',
        pipeline=train_pipeline))

model = dict(
    type='VICReg',
    data_preprocessor=data_preprocessor,
    backbone=dict(type='ResNet', depth=50, zero_init_residual=True),
    neck=dict(
        type='NonLinearNeck',  # the official expander, --mlp 8192-8192-8192
        in_channels=2048,
        hid_channels=8192,
        out_channels=8192,
        num_layers=3,
        with_bias=True,
        with_last_bn=False,
        with_last_bias=False,
        with_avg_pool=True,
        norm_cfg=dict(type='BN1d')),
    loss=dict(
        type='VICRegLoss',
        invariance_weight=25.0,
        variance_weight=25.0,
        covariance_weight=1.0))
# the official code converts every BatchNorm (backbone and expander) to SyncBN
sync_bn = 'torch'

# LARS without weight decay and adaptation on biases and BatchNorm parameters
# (official exclude_bias_and_norm)
optim_wrapper = dict(
    # mixed precision written here, the same on any machine: bf16 autocast
    # without a loss scaler ("bfloat16 has float32's exponent range, so
    # gradients do not underflow and need no scaling", pmsn_mm's wrapper;
    # mmengine's AmpOptimWrapper would run fp16 and refuses a CPU)
    type='DeviceAwareAmpOptimWrapper',
    dtype='bfloat16',
    loss_scale='dynamic',
    # one param group per distinct setting (pmsn_mm; docs/openmmlab.md)
    constructor='CoalescedOptimWrapperConstructor',
    # mmpretrain's LARS update without host syncs
    optimizer=dict(
        type='SyncFreeLARS', lr=lr, momentum=0.9, weight_decay=1e-6,
        eta=0.001),
    paramwise_cfg=dict(
        custom_keys={
            'bn': dict(decay_mult=0, lars_exclude=True),
            'bias': dict(decay_mult=0, lars_exclude=True),
            'downsample.1': dict(decay_mult=0, lars_exclude=True),
        }))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-9, by_epoch=True, begin=0,
         end=warmup_epochs, convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=max_epochs - warmup_epochs,
         eta_min=lr * 1e-3, by_epoch=True, begin=warmup_epochs,
         end=max_epochs, convert_to_iter_based=True),
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs)
default_hooks = dict(checkpoint=dict(interval=10, max_keep_ckpts=3))
auto_scale_lr = dict(base_batch_size=1024, enable=False)
