# The CPU toy PMSN job with class-imbalanced batches: only K = 2 of the 10
# background classes per batch, 30 images each.
_base_ = '../pmsn/pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'
batch_size = 60
train_dataloader = dict(
    batch_size=batch_size,
    sampler=dict(
        _delete_=True,
        type='ClassStratifiedSampler',
        shuffle=True,
        classes_per_batch=2, batch_size=batch_size),
    dataset=dict(label='background'))
