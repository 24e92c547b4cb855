# PMSN on ImageNet-1K with a power-law prior (tau 0.25, paper Table 3).
_base_ = './pmsn_vit-base-p16_16xb64-300e_in1k-uniform.py'
model = dict(
    head=dict(prior=dict(_delete_=True, type='PowerLawPrior', tau=0.25)))
