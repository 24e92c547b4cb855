# Linear probe of paper App. E.2 (VISSL defaults): ViT-L/16 concatenated CLS
# tokens of the last 4 blocks on CIFAR-100; plain linear + BN-linear probes
# trained in one run.
_base_ = [
    '../../_base_/models/vit-large-p16-concat4cls_linear-probe.py',
    '../../_base_/datasets/cifar100_linear-probe_vit.py',
    '../../_base_/schedules/sgd-nesterov_steplr-28e.py',
    '../../_base_/default_runtime.py',
]
model = dict(head=dict(num_classes=100))
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=100),
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=1))
