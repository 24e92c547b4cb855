# SimCLR with class-imbalanced batches (paper §4): only K = 8 classes per
# global batch of 3840 (16 GPUs x 240), 480 images each; all else as the
# class-balanced run.
_base_ = './simclr_resnet50_16xb240-coslr-300e_in1k-class-balanced-k960.py'
train_dataloader = dict(batch_sampler=dict(classes_per_batch=8))
