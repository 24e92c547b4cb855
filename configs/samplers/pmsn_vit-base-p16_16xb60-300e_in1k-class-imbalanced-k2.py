# MSN/PMSN (uniform prior) on ImageNet with class-imbalanced batches (paper
# §4): 16 GPUs x 60 = 960 images from only 2 classes (480 each).
_base_ = '../pmsn/pmsn_vit-base-p16_16xb64-300e_in1k-uniform.py'
batch_size = 60
train_dataloader = dict(
    batch_size=batch_size,
    sampler=dict(
        _delete_=True,
        type='ClassStratifiedSampler',
        shuffle=True,
        classes_per_batch=2, batch_size=batch_size))
