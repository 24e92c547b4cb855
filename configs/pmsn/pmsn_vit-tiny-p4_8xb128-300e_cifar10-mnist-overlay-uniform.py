# Paper toy setting with the uniform prior (= MSN): discards the digit.
_base_ = './pmsn_vit-tiny-p4_8xb128-300e_cifar10-mnist-overlay-power-law.py'
model = dict(
    head=dict(prior=dict(_delete_=True, type='UniformPrior')))
