# PMSN on iNat18 with the true class prior p_k = D_k / D (paper Table 2),
# counted from the training annotations (no image is read).
_base_ = './pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py'
model = dict(
    head=dict(
        prior=dict(
            _delete_=True,
            type='ClassPrior',
            dataset={{_base_.train_dataset}})))
