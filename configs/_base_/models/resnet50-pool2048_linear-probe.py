# Linear-probe model (paper App. E.2, SEER protocol): frozen ResNet-50,
# globally average-pooled last feature map (2048-d, VISSL res5 +
# AdaptiveAvgPool2d((1, 1))). A plain linear probe and a BatchNorm + linear
# probe, trained together. The frozen encoder comes from a PMSN/MSN (or any
# mmpretrain) checkpoint:
#   --cfg-options model.backbone.init_cfg.checkpoint=CKPT
# prefix 'backbone.' loads the online encoder; for the EMA target encoder
# use prefix 'target_net.module.0.' (or tools/model_converters/
# pmsn_to_backbone.py --target).
model = dict(
    type='ImageClassifier',
    backbone=dict(
        type='ResNet',
        depth=50,
        out_indices=(3, ),  # the (B, 2048, 7, 7) map of the last stage
        frozen_stages=4,  # stem + all 4 stages
        norm_eval=True,  # BatchNorm statistics frozen too
        style='pytorch',
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.')),
    neck=dict(type='AdaptivePoolNeck', output_size=1),
    head=dict(
        type='MultiLinearProbeHead',
        num_classes=1000,  # set per dataset
        in_channels=2048,
        probes=('linear', 'bn_linear'),
        # VISSL eval_mlp: BatchNorm2d with its defaults (affine, eps 1e-5,
        # momentum 0.1) before the Linear layer
        bn_affine=True,
        bn_eps=1e-5,
        bn_momentum=0.1,
        # no mmengine init: PyTorch's default Linear init, as VISSL's heads
        init_cfg=[],
        loss=dict(type='CrossEntropyLoss', loss_weight=1.0)))
# VISSL converts every BatchNorm to SyncBN (CONVERT_BN_TO_SYNC_BN): the BN
# probe normalises with the statistics of the global batch (multi-GPU runs)
sync_bn = 'torch'
