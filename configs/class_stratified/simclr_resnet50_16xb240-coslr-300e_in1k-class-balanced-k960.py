# SimCLR, ResNet-50 on ImageNet-1K with class-balanced batches (paper §4,
# App. E.1: VISSL, 300 epochs, 10 warm-up epochs then cosine, LARS,
# temperature 0.1). mmpretrain's SimCLR model and pipeline, set to VISSL's
# pretraining config (configs/config/pretrain/simclr/simclr_8node_resnet.yaml,
# table: configs/recipes/simclr_class_stratified.yaml):
# - lr 0.3 x batch / 256 (VISSL's auto_lr_scaling) = 4.5 at 3840; linear
#   warm-up from lr / 8 (VISSL starts at 0.3 x the batch of one 8-GPU node /
#   256: 0.6 of 4.8 on its 8 nodes), then cosine to 0 at epoch 300;
# - LARS (trust 0.001, momentum 0.9) and weight decay 1e-6 on every
#   parameter, BatchNorm and biases included (regularize_bn/bias: True);
# - projection head Linear(2048, 2048)-ReLU-Linear(2048, 128), with biases
#   and no BatchNorm (VISSL's two "mlp" heads); ResNet-50 without
#   zero-initialised residuals (VISSL's default);
# - views: 2 x crop 224 (scale 0.08-1, bilinear), flip, colour distortion
#   strength 1 (jitter 0.8/0.8/0.8/0.2 p 0.8, grayscale p 0.2), blur p 0.5.
# Deviations: K = 960 classes per global batch needs a batch divisible by
# 960, so the paper's 4096 becomes 3840 = 16 GPUs x 240 (4 images per class);
# the class-imbalanced variant (K = 8) keeps the same batch. The cosine
# starts at the warm-up's end, lr = 4.5 (1 + cos(pi (e - 10) / 290)) / 2, as
# the other methods' official code runs it; VISSL's "fixed" interval scaling
# evaluates one 300-epoch half period from epoch 0 instead, 4.5 (1 +
# cos(pi e / 300)) / 2 after the warm-up (mmengine's cosine starts its half
# period where it begins). BatchNorm is synchronised over all GPUs (VISSL:
# apex SyncBN in groups of 8 GPUs).
_base_ = 'mmpretrain::simclr/simclr_resnet50_16xb256-coslr-200e_in1k.py'
custom_imports = dict(imports=['pmsn_mm'], allow_failed_imports=False)
# pmsn_mm's runner and its two hooks of configs/_base_/default_runtime.py
# (config checks, loaders fitted to the machine, the work-dir guard; the
# CPU threads of a busy machine, the final validation line), which this
# mmpretrain base lacks
runner_type = 'PMSNRunner'

batch_size = 240  # per GPU; 16 GPUs -> 3840
max_epochs = 300
warmup_epochs = 10
lr = 0.3 * 3840 / 256
# mmpretrain's SimCLR views (imagenet_bs32_simclr.py), restated with
# pmsn_mm's ModuloHueColorJitter (mmcv's hue step fails under numpy >= 2)
# and CheckedLoadImageFromFile (errors that name the file)
view_pipeline = [
    dict(type='RandomResizedCrop', scale=224, backend='pillow'),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[
            dict(
                type='ModuloHueColorJitter',
                brightness=0.8,
                contrast=0.8,
                saturation=0.8,
                hue=0.2)
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
train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(type='MultiView', num_views=2, transforms=[view_pipeline]),
    dict(type='PackInputs')
]
train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    batch_size=batch_size,
    drop_last=False,  # the batch sampler yields whole batches only
    batch_sampler=dict(
        type='ClassStratifiedBatchSampler', classes_per_batch=960),
    # mmengine passes the `_scope_` that inheriting from `mmpretrain::` adds
    # to collate_fn on to default_collate, which refuses it: restate it
    collate_fn=dict(_delete_=True, type='default_collate'),
    dataset=dict(pipeline=train_pipeline))

# the batch uploaded once, not mmengine's per-sample cast_data
data_preprocessor = dict(type='BatchCastPreprocessor')
model = dict(
    type='SyncFreeSimCLR',  # mmpretrain's loss without host syncs
    backbone=dict(zero_init_residual=False),
    neck=dict(
        _delete_=True,
        type='MoCoV2Neck',  # Linear-ReLU-Linear with biases, no BatchNorm
        in_channels=2048,
        hid_channels=2048,
        out_channels=128,
        with_avg_pool=True))

# no paramwise_cfg: weight decay and the LARS adaptation on every parameter
# (SyncFreeLARS: mmpretrain's LARS update without host syncs)
optim_wrapper = dict(
    constructor='CoalescedOptimWrapperConstructor',
    optimizer=dict(type='SyncFreeLARS', lr=lr),
    paramwise_cfg=dict(_delete_=True))
param_scheduler = [
    dict(type='LinearLR', start_factor=1 / 8, by_epoch=True, begin=0,
         end=warmup_epochs, convert_to_iter_based=True),
    dict(type='CosineAnnealingLR', T_max=max_epochs - warmup_epochs,
         eta_min=0.0, by_epoch=True, begin=warmup_epochs, end=max_epochs,
         convert_to_iter_based=True),
]
train_cfg = dict(max_epochs=max_epochs)
auto_scale_lr = dict(base_batch_size=3840, enable=False)
default_hooks = dict(
    cpu_threads=dict(type='CPUThreadsHook'),
    # SIGTERM/SIGUSR1: checkpoint after the current iteration, requeue
    # under Slurm, exit 75 (docs/distributed.md)
    preemption=dict(type='PreemptionHook'),
    final_val_metrics=dict(type='FinalValMetricsHook'))
