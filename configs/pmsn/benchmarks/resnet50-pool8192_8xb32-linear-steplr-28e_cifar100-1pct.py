# Linear probe of paper App. E.2 (VISSL defaults): ResNet-50 2x2-pooled 8192-d
# features on CIFAR-100, 1% of the training labels; plain linear + BN-linear
# probes trained in one run.
_base_ = [
    '../../_base_/models/resnet50-pool8192_linear-probe.py',
    '../../_base_/datasets/cifar100-1pct_linear-probe.py',
    '../../_base_/schedules/sgd-nesterov_steplr-28e.py',
    '../../_base_/default_runtime.py',
]
model = dict(head=dict(num_classes=100))
# VISSL's ResNet probes (regularize_bn: False): no weight decay on the
# BatchNorm probe's scale and shift
optim_wrapper = dict(paramwise_cfg=dict(norm_decay_mult=0.0))
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=100),
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=1))
