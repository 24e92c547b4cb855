# PSwAV on ImageNet-1K: the SwAV recipe with codes that give prototype k the
# share p_k ∝ k^-0.25 of each (global) batch, the power law PMSN uses on
# ImageNet (paper Table 3).
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform.py'

model = dict(
    head=dict(prior=dict(_delete_=True, type='PowerLawPrior', tau=0.25)))
