# data2vec with class-imbalanced batches (paper §4): only K = 2 classes per
# global batch of 1920 (16 GPUs x 120), 960 images each. The smallest
# ImageNet-1K classes have 732 training images, fewer than 960, so images are
# drawn with replacement within a class (most classes have 1300).
_base_ = './data2vec_beit-base-p16_16xb120-amp-coslr-800e_in1k-class-balanced-k960.py'  # noqa: E501
train_dataloader = dict(
    batch_sampler=dict(classes_per_batch=2, replacement=True))
