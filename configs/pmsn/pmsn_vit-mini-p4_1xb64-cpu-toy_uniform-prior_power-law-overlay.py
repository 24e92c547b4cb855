# Same CPU toy job with the uniform prior, i.e. plain MSN (lambda * KL(p̄‖U)
# equals MSN's me-max term): the paper's claim is that it discards the digit.
_base_ = './pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'

model = dict(head=dict(prior=dict(_delete_=True, type='UniformPrior')))
