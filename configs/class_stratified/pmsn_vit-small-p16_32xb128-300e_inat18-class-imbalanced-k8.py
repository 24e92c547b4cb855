# PMSN (uniform prior) on iNat18 with class-imbalanced batches: 8 classes per
# global batch of 4096 (512 images each). Most iNat18 classes have fewer than
# 512 images, so images are drawn with replacement within a class.
_base_ = '../pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py'
train_dataloader = dict(
    batch_size=128,  # per GPU
    drop_last=False,  # the batch sampler yields whole batches only
    batch_sampler=dict(
        type='ClassStratifiedBatchSampler',
        classes_per_batch=8,
        replacement=True))
