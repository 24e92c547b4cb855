# The CPU toy PMSN job with inverse square-root frequency sampling over the
# power-law distributed digit classes (labels = digit).
_base_ = './pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'
train_dataloader = dict(
    sampler=dict(
        _delete_=True, type='ClassFrequencySampler', power=0.5,
        shuffle=True),
    dataset=dict(label='digit'))
