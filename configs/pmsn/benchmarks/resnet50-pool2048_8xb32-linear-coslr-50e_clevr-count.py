# Linear probe of paper App. E.2 (VISSL defaults): ResNet-50 pooled 2048-d
# features on CLEVR/Count; plain linear + BN-linear probes trained in one run.
_base_ = [
    '../../_base_/models/resnet50-pool2048_linear-probe.py',
    '../../_base_/datasets/clevr-count_linear-probe.py',
    '../../_base_/schedules/sgd-nesterov_coslr-50e.py',
    '../../_base_/default_runtime.py',
]
model = dict(head=dict(num_classes=8))
# VISSL's ResNet probes (regularize_bn: False): no weight decay on the
# BatchNorm probe's scale and shift
optim_wrapper = dict(paramwise_cfg=dict(norm_decay_mult=0.0))
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=100),
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=1))
