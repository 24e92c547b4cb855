# Linear probe of paper App. E.2 (VISSL defaults): data2vec ViT-B/16
# (BEiT-style) last-layer CLS token on Places205; plain linear + BN-linear
# probes trained in one run.
_base_ = [
    '../../_base_/models/data2vec-beit-base-p16-lastcls_linear-probe.py',
    '../../_base_/datasets/places205_linear-probe_vit.py',
    '../../_base_/schedules/sgd-nesterov_steplr-14e.py',
    '../../_base_/default_runtime.py',
]
model = dict(head=dict(num_classes=205))
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=100),
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=1))
