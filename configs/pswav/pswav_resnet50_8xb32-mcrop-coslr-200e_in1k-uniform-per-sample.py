# SwAV on ImageNet-1K through PSwAV with the uniform prior: mmpretrain's SwAV
# model and pipeline, set to the official facebookresearch/swav recipe for a
# batch of 256 (scripts/swav_200ep_bs256_pretrain.sh, main_swav.py,
# src/multicropdataset.py; table: configs/recipes/pswav.yaml): ResNet-50
# (residual branches not zero-initialised, SyncBN), 2 x 224 px (scale
# 0.14-1) + 6 x 96 px (scale 0.05-0.14) crops, 3000 prototypes, epsilon
# 0.05, 3 Sinkhorn iterations, temperature 0.1, queue of 3840 from epoch 15,
# prototypes frozen for 5005 iterations, LARS (trust 0.001, momentum 0.9)
# and weight decay 1e-6 on every parameter, lr 0.6 cosine to 0.0006 over
# 200 epochs without warm-up. The codes come from pmsn_mm's distributed
# Sinkhorn (prototype sums all-reduced every iteration, as in the official
# SwAV). The views are drawn per sample in the dataloader workers
# (mmpretrain's SwAV pipeline); the shipped
# ./pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform.py draws the same views
# batched on the device. Unlike the official script (apex O1 mixed
# precision), it trains in fp32.
_base_ = 'mmpretrain::swav/swav_resnet50_8xb32-mcrop-coslr-200e_in1k-224px-96px.py'
custom_imports = dict(imports=['pmsn_mm'], allow_failed_imports=False)
# pmsn_mm's runner and its two hooks of configs/_base_/default_runtime.py
# (config checks, loaders fitted to the machine, the work-dir guard; the
# CPU threads of a busy machine, the final validation line), which this
# mmpretrain base lacks
runner_type = 'PMSNRunner'

# mmpretrain's SwAV views, restated with pmsn_mm's ModuloHueColorJitter
# (mmcv's hue step fails under numpy >= 2) and CheckedLoadImageFromFile
# (errors that name the file)
num_crops = [2, 6]
view_pipeline1 = [
    dict(
        type='RandomResizedCrop',
        scale=224,
        crop_ratio_range=(0.14, 1.),
        backend='pillow'),
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
    dict(type='RandomFlip', prob=0.5),
]
# the 96 px crops: the same chain after a smaller crop
view_pipeline2 = [
    dict(view_pipeline1[0], scale=96, crop_ratio_range=(0.05, 0.14)),
    *view_pipeline1[1:],
]
train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(
        type='MultiView',
        num_views=num_crops,
        transforms=[view_pipeline1, view_pipeline2]),
    dict(type='PackInputs')
]
# mmengine passes the `_scope_` that inheriting from `mmpretrain::` adds to
# collate_fn on to default_collate, which refuses it: restate it plainly
train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    collate_fn=dict(_delete_=True, type='default_collate'),
    dataset=dict(pipeline=train_pipeline))
# mmpretrain's LARS update without host syncs; one param group per distinct
# setting (pmsn_mm's constructors: docs/openmmlab.md)
optim_wrapper = dict(
    constructor='CoalescedOptimWrapperConstructor',
    optimizer=dict(type='SyncFreeLARS'))
# the recipe's lr is for 8 GPUs x 32 images (`--auto-scale-lr` rescales it)
auto_scale_lr = dict(base_batch_size=256)

# PSwAVHead owns the 3000 prototypes and the prior; PSwAVLoss keeps SwAV's
# settings (epsilon 0.05, temperature 0.1, 3 Sinkhorn iterations, 2 + 6 crops)
model = dict(
    type='PSwAV',
    # the batch uploaded once, not mmengine's per-sample cast_data
    data_preprocessor=dict(type='BatchCastPreprocessor'),
    # the official ResNet-50 (src/resnet50.py) keeps zero_init_residual=False
    backbone=dict(zero_init_residual=False),
    head=dict(
        _delete_=True,
        type='PSwAVHead',
        num_prototypes=3000,
        in_channels=128,
        prior=dict(type='UniformPrior'),
        loss=dict(
            type='PSwAVLoss',
            sinkhorn_iterations=3,
            epsilon=0.05,
            temperature=0.1,
            crops_for_assign=[0, 1],
            num_crops=[2, 6])))
default_hooks = dict(
    cpu_threads=dict(type='CPUThreadsHook'),
    # SIGTERM/SIGUSR1: checkpoint after the current iteration, requeue
    # under Slurm, exit 75 (docs/distributed.md)
    preemption=dict(type='PreemptionHook'),
    final_val_metrics=dict(type='FinalValMetricsHook'))
