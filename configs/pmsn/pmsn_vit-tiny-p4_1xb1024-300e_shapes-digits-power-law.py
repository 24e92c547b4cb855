# Paper-scale toy run (App. F "Toy setting") on one GPU, with the fast
# in-memory pipeline: ViT-Tiny/4, batch 1024, 300 epochs, 15 warm-up epochs,
# 10 prototypes, T 0.1, sharpen 0.25, mask 0.05, 1 random view and no focal
# view, no blur, no gradient clipping, EMA 0.996 -> 1, weight decay
# 0.04 -> 0.4, MSN's 1.25x schedules (configs/recipes/toy.yaml lists every
# value with its source and each deviation with its reason). Data: the offline shapes + digits toy with 50,000 training
# images (the size of CIFAR-10's training split).
# Inherited from the CPU recipe (docs/toy_prior_study.md), where they differ
# from App. F: Sinkhorn towards the prior, lambda 1 (paper 100), random
# resized crop (0.8, 1) without flip (paper (0.5, 1) + flip), a 10 px digit
# on 20 px images. The paper's values:
#   --cfg-options model.head.loss.prior_weight=100 \
#       model.data_preprocessor.views.0.scale="(0.5,1.0)" \
#       model.data_preprocessor.views.0.flip_prob=0.5
#   python tools/analysis_tools/prior_toy_study.py THIS_CONFIG --device cuda
_base_ = './pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'

num_images = 50000
batch_size = 1024
auto_scale_lr = dict(base_batch_size=batch_size)
epochs = 300
iters_per_epoch = num_images // batch_size
max_iters = epochs * iters_per_epoch
warmup_iters = 15 * iters_per_epoch

train_dataloader = dict(
    batch_size=batch_size, dataset=dict(num_samples=num_images))

model = dict(
    backbone=dict(
        _delete_=True,
        type='MSNViT',
        arch='deit-tiny',  # 192-d, 12 layers, 3 heads
        img_size=20,
        patch_size=4,
        in_channels=1,
        drop_path_rate=0.0),
    neck=dict(in_channels=192, hidden_channels=2048, out_channels=256),
    head=dict(in_channels=256),
    target_momentum=0.996)

# MSN's schedules (../_base_/schedules/adamw_msn_300e.py) in iterations:
# lr 2e-4 -> 1e-3 over 15 epochs, then a cosine towards 1e-6 and weight decay
# 0.04 -> 0.4, both cosines (and the EMA) spanning 1.25x the run
schedule_iters = int(1.25 * max_iters)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.2, by_epoch=False, begin=0,
         end=warmup_iters),
    dict(type='CosineAnnealingLR', T_max=schedule_iters - warmup_iters,
         eta_min=1e-6, by_epoch=False, begin=warmup_iters, end=max_iters),
    dict(type='CosineAnnealingWeightDecay', eta_min=0.4,
         T_max=schedule_iters, by_epoch=False, begin=0, end=max_iters),
]
train_cfg = dict(
    type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=50),
    checkpoint=dict(type='CheckpointHook', interval=10 * iters_per_epoch,
                    by_epoch=False, max_keep_ckpts=1))
