# MSN/PMSN (uniform prior) on ImageNet with class-balanced batches (paper §4):
# 16 GPUs x 60 = 960 images, one from each of 960 classes.
_base_ = '../pmsn/pmsn_vit-base-p16_16xb64-300e_in1k-uniform.py'
batch_size = 60
train_dataloader = dict(
    batch_size=batch_size,
    sampler=dict(
        _delete_=True,
        type='ClassStratifiedSampler',
        shuffle=True,
        classes_per_batch=960, batch_size=batch_size))
