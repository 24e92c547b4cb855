# PSwAV on iNat18 with codes following the true class prior p_k = D_k / D
# (8142 classes = 8142 prototypes), counted from the training annotations
# (no image is read); PMSN's class-prior run is paper Table 2.
_base_ = './pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-uniform.py'

model = dict(
    head=dict(
        prior=dict(
            _delete_=True, type='ClassPrior', dataset=_base_.inat18_train)))
