# VISSL linear-evaluation optimiser: SGD, Nesterov momentum 0.9, weight decay
# 5e-4, lr 0.01 per 256 images (auto-scaled), schedule per epoch. Source: VISSL
# configs/config/benchmark/linear_image_classification/
#   clevr_dist: 100 epochs, cosine 0.01 -> 0.0001
optim_wrapper = dict(
    type='OptimWrapper',
    # one param group per distinct setting (pmsn_mm; docs/openmmlab.md)
    constructor='CoalescedOptimWrapperConstructor',
    optimizer=dict(
        type='SGD', lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4))
# eta_min as a ratio so that --auto-scale-lr scales it too
param_scheduler = [
    dict(type='CosineAnnealingLR', by_epoch=True, T_max=100, begin=0, end=100,
         eta_min_ratio=0.01)
]

train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=100, val_interval=1)
val_cfg = dict()
test_cfg = dict()
# lr 0.01 is for 256 images per step; `tools/train.py --auto-scale-lr` scales
# it linearly to the actual total batch size.
auto_scale_lr = dict(base_batch_size=256)
