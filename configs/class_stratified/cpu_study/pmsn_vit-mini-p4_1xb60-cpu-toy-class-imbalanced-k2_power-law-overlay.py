# The CPU toy PMSN job (power-law prior) with class-imbalanced batches: only
# K = 2 of the 10 background classes per batch, 30 images each.
_base_ = './pmsn_vit-mini-p4_1xb60-cpu-toy-class-balanced-k10_power-law-overlay.py'  # noqa: E501
train_dataloader = dict(batch_sampler=dict(classes_per_batch=2))
