# PSwAV on iNat18 with codes following p_k ∝ k^-0.25 (PMSN's iNat18 power law,
# paper Table 3).
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-uniform.py'

model = dict(
    head=dict(prior=dict(_delete_=True, type='PowerLawPrior', tau=0.25)))
