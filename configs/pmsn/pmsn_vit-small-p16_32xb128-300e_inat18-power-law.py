# PMSN on iNat18 with a power-law prior p_k ∝ k^-0.25 (paper Table 3).
_base_ = './pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py'
model = dict(
    head=dict(prior=dict(_delete_=True, type='PowerLawPrior', tau=0.25)))
