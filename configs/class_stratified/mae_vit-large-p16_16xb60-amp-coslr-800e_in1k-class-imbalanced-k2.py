# MAE with class-imbalanced batches (paper §4): only K = 2 classes per global
# batch of 960 (16 GPUs x 60), 480 images each; all else as the
# class-balanced run.
_base_ = './mae_vit-large-p16_16xb60-amp-coslr-800e_in1k-class-balanced-k960.py'  # noqa: E501
train_dataloader = dict(batch_sampler=dict(classes_per_batch=2))
