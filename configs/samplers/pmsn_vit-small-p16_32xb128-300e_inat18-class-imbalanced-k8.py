# PMSN (uniform prior) on iNat18 with class-imbalanced batches: 8 classes per
# global batch of 4096 (512 images each). Most iNat18 classes have fewer than
# 512 images, so images are drawn with replacement within a class.
_base_ = '../pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py'
batch_size = 128
train_dataloader = dict(
    batch_size=batch_size,
    sampler=dict(
        _delete_=True,
        type='ClassStratifiedSampler',
        shuffle=True,
        classes_per_batch=8,
        batch_size=batch_size,
        replacement=True))
