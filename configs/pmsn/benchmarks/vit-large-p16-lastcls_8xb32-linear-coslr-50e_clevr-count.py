# Linear probe of paper App. E.2 (VISSL defaults): ViT-L/16 last-layer CLS
# token on CLEVR/Count; plain linear + BN-linear probes trained in one run.
_base_ = [
    '../../_base_/models/vit-large-p16-lastcls_linear-probe.py',
    '../../_base_/datasets/clevr-count_linear-probe.py',
    '../../_base_/schedules/sgd-nesterov_coslr-50e.py',
    '../../_base_/default_runtime.py',
]
model = dict(head=dict(num_classes=8))
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=100),
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=1))
