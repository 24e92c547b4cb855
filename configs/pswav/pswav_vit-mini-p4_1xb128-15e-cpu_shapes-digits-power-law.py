# PSwAV on the CPU toy set: SwAV (mmpretrain's SwAV step, SwAVNeck, SwAVHook;
# PSwAVHead owns the prototypes and the prior) whose Sinkhorn codes give
# prototype k the share p_k ∝ k^-0.5 of each batch (the digits' distribution)
# instead of 1 / K. Data, views,
# backbone, optimiser, schedule and kNN evaluation are inherited from the toy
# PMSN job, so a change of the toy recipe applies to both.
_base_ = '../pmsn/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'

# SwAVNeck average-pools feature maps: the ViT returns its patch tokens as a
# (B, C, H, W) map, so the embedding is the mean patch token (PMSN uses the
# CLS token).
toy_backbone = _base_.model.backbone
toy_backbone.out_type = 'featmap'

model = dict(
    _delete_=True,
    type='PSwAV',
    data_preprocessor=_base_.model.data_preprocessor,
    backbone=toy_backbone,
    neck=dict(
        type='SwAVNeck',
        in_channels=64,
        hid_channels=256,
        out_channels=128,
        with_avg_pool=True,
        norm_cfg=dict(type='BN1d')),
    head=dict(
        type='PSwAVHead',
        num_prototypes=_base_.num_prototypes,
        in_channels=128,
        prior=dict(type='PowerLawPrior', tau=0.5),
        loss=dict(
            type='PSwAVLoss',
            epsilon=0.05,
            temperature=0.1,
            sinkhorn_iterations=3,
            crops_for_assign=[0, 1],
            num_crops=[2])))

# SwAV keeps the prototypes fixed for the first epoch; no queue (a batch of
# 128 already exceeds the 10 prototypes). The PMSN-only hooks of the base are
# dropped, its others kept; the kNN evaluation (val loop) is inherited.
pmsn_only_hooks = ('PrototypeUsageHook', )
custom_hooks = [
    dict(
        type='SwAVHook',
        priority='VERY_HIGH',
        batch_size=_base_.batch_size,
        crops_for_assign=[0, 1],
        feat_dim=128,
        queue_length=0,
        frozen_layers_cfg=dict(prototypes=_base_.iters_per_epoch)),
] + [h for h in _base_.custom_hooks if h['type'] not in pmsn_only_hooks]

# SwAVNeck registers its BatchNorm twice (`norm` and inside
# `projection_neck`): add its parameters to the optimiser once.
optim_wrapper = dict(paramwise_cfg=dict(bypass_duplicate=True))
