# PMSN (uniform prior) on iNat18 with inverse square-root frequency sampling
# (paper Table 4).
_base_ = './pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py'
train_dataloader = dict(
    sampler=dict(
        _delete_=True, type='ClassFrequencySampler', power=0.5,
        shuffle=True))
