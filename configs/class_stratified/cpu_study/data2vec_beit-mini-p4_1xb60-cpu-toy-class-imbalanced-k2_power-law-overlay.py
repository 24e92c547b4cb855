# CPU study, data2vec, class-imbalanced: K = 2 background classes per batch.
_base_ = './data2vec_beit-mini-p4_1xb60-cpu-toy-class-balanced-k10_power-law-overlay.py'  # noqa: E501
train_dataloader = dict(batch_sampler=dict(classes_per_batch=2))
