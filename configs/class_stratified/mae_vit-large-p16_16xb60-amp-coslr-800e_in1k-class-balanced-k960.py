# MAE, ViT-L/16 on ImageNet-1K with class-balanced batches (paper §4,
# App. E.1): mmpretrain's MAE model and pipeline, set to the official
# facebookresearch/mae recipe (PRETRAIN.md, main_pretrain.py; table:
# configs/recipes/mae_class_stratified.yaml): 800 epochs, AdamW betas
# (0.9, 0.95), lr 1.5e-4 x batch / 256 with 40 linear warm-up epochs then
# cosine to 0, weight decay 0.05 on every parameter except 1-D ones (biases,
# norms; the class and mask tokens are decayed, as timm's add_weight_decay
# there), mask ratio 0.75, normalised-pixel loss, one crop 224 (scale
# 0.2-1, bicubic) + flip, mixed precision (the official code autocasts too).
# Deviations: K = 960 classes per global batch needs a batch divisible by
# 960, so the paper's 1024 becomes 960 = 16 GPUs x 60 (one image per class;
# lr 5.625e-4); the class-imbalanced variant (K = 2) keeps the same batch.
# The official warm-up starts at lr 0; mmengine's LinearLR cannot (its
# chained update divides by the start factor), mmpretrain's 1e-9 x lr stays.
_base_ = 'mmpretrain::mae/mae_vit-large-p16_8xb512-amp-coslr-800e_in1k.py'
custom_imports = dict(imports=['pmsn_mm'], allow_failed_imports=False)
# pmsn_mm's runner and its two hooks of configs/_base_/default_runtime.py
# (config checks, loaders fitted to the machine, the work-dir guard; the
# CPU threads of a busy machine, the final validation line), which this
# mmpretrain base lacks
runner_type = 'PMSNRunner'

batch_size = 60  # per GPU; 16 GPUs -> 960
# mmpretrain's MAE pipeline (imagenet_bs512_mae.py), restated with pmsn_mm's
# CheckedLoadImageFromFile (errors that name the file)
train_pipeline = [
    dict(type='CheckedLoadImageFromFile'),
    dict(
        type='RandomResizedCrop',
        scale=224,
        crop_ratio_range=(0.2, 1.0),
        backend='pillow',
        interpolation='bicubic'),
    dict(type='RandomFlip', prob=0.5),
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
# official param groups: no weight decay on 1-D parameters only
optim_wrapper = dict(
    # mixed precision written here, the same on any machine: bf16 autocast
    # without a loss scaler ("bfloat16 has float32's exponent range, so
    # gradients do not underflow and need no scaling", pmsn_mm's wrapper;
    # mmpretrain's AmpOptimWrapper would run fp16 and refuses a CPU)
    type='DeviceAwareAmpOptimWrapper',
    dtype='bfloat16',
    # one param group per distinct setting (pmsn_mm; docs/openmmlab.md)
    constructor='CoalescedOptimWrapperConstructor',
    optimizer=dict(lr=1.5e-4 * 960 / 256),
    paramwise_cfg=dict(_delete_=True, flat_decay_mult=0.0))
# the batch uploaded once, not mmengine's per-sample cast_data
data_preprocessor = dict(type='BatchCastPreprocessor')
# a fresh run, not mmpretrain's auto-resume
resume = False
auto_scale_lr = dict(base_batch_size=960, enable=False)
default_hooks = dict(
    cpu_threads=dict(type='CPUThreadsHook'),
    # SIGTERM/SIGUSR1: checkpoint after the current iteration, requeue
    # under Slurm, exit 75 (docs/distributed.md)
    preemption=dict(type='PreemptionHook'),
    final_val_metrics=dict(type='FinalValMetricsHook'))
