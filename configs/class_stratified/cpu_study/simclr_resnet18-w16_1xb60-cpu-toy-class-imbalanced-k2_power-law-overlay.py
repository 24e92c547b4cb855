# CPU study, SimCLR, class-imbalanced: K = 2 background classes per batch.
_base_ = './simclr_resnet18-w16_1xb60-cpu-toy-class-balanced-k10_power-law-overlay.py'  # noqa: E501
train_dataloader = dict(batch_sampler=dict(classes_per_batch=2))
