# Linear-probe model (paper App. E.2, VISSL): frozen ViT-S/16, last-layer CLS
# token after the final LayerNorm (VISSL lastCLS). A plain linear probe and a
# BatchNorm + linear probe, trained together. The frozen encoder comes from a
# PMSN/MSN (or any mmpretrain) checkpoint:
#   --cfg-options model.backbone.init_cfg.checkpoint=CKPT
# prefix 'backbone.' loads the online encoder; for the EMA target encoder
# use prefix 'target_net.module.0.' (or tools/model_converters/
# pmsn_to_backbone.py --target).
model = dict(
    type='ImageClassifier',
    backbone=dict(
        type='VisionTransformer',
        arch='deit-small',
        img_size=224,
        patch_size=16,
        out_type='cls_token',
        out_indices=-1,
        final_norm=True,
        drop_path_rate=0.0,  # deterministic features (VISSL: trunk in eval)
        frozen_stages=12,  # every block, patch embedding, tokens, final norm
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.')),
    head=dict(
        type='MultiLinearProbeHead',
        num_classes=1000,  # set per dataset
        in_channels=384,
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
