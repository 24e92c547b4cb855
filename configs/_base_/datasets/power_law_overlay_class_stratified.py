# The photo-overlay toy set for the CPU class-stratified study (paper §4 on
# the offline toy set): batches of 60 drawn by ClassStratifiedBatchSampler
# over the 10 background classes (label='background'), K = 10
# (class-balanced: 6 images of every class) by default, K = 2 in the
# class-imbalanced configs (30 images of 2 classes); the kNN val loop on both
# labels. One augmented view per MultiView branch: `view_pipeline`.
_base_ = './power_law_overlay.py'

batch_size = 60
# the lr of the study's schedule is for this batch (`--auto-scale-lr`)
auto_scale_lr = dict(base_batch_size=batch_size)

# gray images replicated to 3 channels, normalised with the toy statistics
toy_preprocessor = dict(
    type='BatchCastPreprocessor',  # the batch uploaded once
    mean={{_base_.data_preprocessor.mean}},
    std={{_base_.data_preprocessor.std}},
    to_rgb=False)

# one augmented view (RandomResizedCrop keeps >= half of the image, as in the
# paper's toy setting, so the top-left digit usually survives)
view_pipeline = [
    dict(type='RandomResizedCrop', scale=32, crop_ratio_range=(0.5, 1.0)),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomApply',
        transforms=[dict(type='ModuloHueColorJitter', brightness=0.4, contrast=0.4)],
        prob=0.8),
]

train_dataloader = dict(
    # the one upload per step non-blocking on a GPU (a copy from pageable
    # memory would be synchronous); pmsn_mm's tools drop it without one
    pin_memory=True,
    batch_size=batch_size,
    drop_last=False,  # the batch sampler yields whole batches only
    batch_sampler=dict(
        type='ClassStratifiedBatchSampler', classes_per_batch=10),
    dataset=dict(split='train', num_samples=5000, label='background'))

val_dataloader = _base_.knn_val_dataloader
val_evaluator = _base_.knn_val_evaluator
val_cfg = dict(type='FeatureValLoop')
