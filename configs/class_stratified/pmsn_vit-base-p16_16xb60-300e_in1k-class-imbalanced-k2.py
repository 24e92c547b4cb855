# MSN/PMSN (uniform prior) on ImageNet with class-imbalanced batches (paper
# §4): 16 GPUs x 60 = 960 images from only 2 classes (480 each).
_base_ = './pmsn_vit-base-p16_16xb60-300e_in1k-class-balanced-k960.py'
train_dataloader = dict(batch_sampler=dict(classes_per_batch=2))
