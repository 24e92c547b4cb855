# PMSN on iNaturalist 2018 with the true class prior p_k = D_k / D (paper
# Table 2, ./pmsn_vit-small-p16_32xb128-300e_inat18-class-prior.py),
# continued from Meta's released MSN ViT-S/16 for 100 epochs
# (docs/msn_checkpoints.md; the command as in
# ./pmsn_vit-small-p16_32xb128-from-msn-100e_inat18-power-law.py).
# Prototypes: a NEW set of 8142, one per class, as the class prior needs
# (prototype k carries class k's frequency); the checkpoint's 1024
# ImageNet prototypes are skipped by load_from (size mismatch, logged).
_base_ = './pmsn_vit-small-p16_32xb128-from-msn-100e_inat18-power-law.py'
model = dict(
    head=dict(
        prior=dict(
            _delete_=True,
            type='ClassPrior',
            dataset={{_base_.train_dataset}})))
