# VICReg with class-imbalanced batches (paper §4): only K = 2 classes per
# global batch of 960 (16 GPUs x 60), 480 images each; all else as the
# class-balanced run.
_base_ = './vicreg_resnet50_16xb60-amp-coslr-300e_in1k-class-balanced-k960.py'
train_dataloader = dict(batch_sampler=dict(classes_per_batch=2))
