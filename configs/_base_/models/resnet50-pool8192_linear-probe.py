# Linear-probe model (paper App. E.2, SEER protocol): frozen ResNet-50, 2x2
# adaptive average pooling of the last feature map, flattened (8192-d, SEER). A
# plain linear probe and a BatchNorm + linear probe, trained together. The
# frozen encoder comes from a PMSN/MSN (or any mmpretrain) checkpoint:
#   --cfg-options model.backbone.init_cfg.checkpoint=CKPT
# prefix 'backbone.' loads the online encoder; for the EMA target encoder
# use prefix 'target_net.module.0.' (or tools/model_converters/
# pmsn_to_backbone.py --target).
_base_ = './resnet50-pool2048_linear-probe.py'
model = dict(
    neck=dict(output_size=2),
    head=dict(
        in_channels=8192,
        # BN per channel of the 2x2-pooled map, like VISSL's BatchNorm2d(2048)
        bn_channels=2048))
