"""Tiny configs shared by tests (written to tmp dirs at test time)."""
import os.path as osp

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
CONFIGS = osp.join(REPO, 'configs')

TINY_CLASSIFIER = f"""
_base_ = [
    '{CONFIGS}/_base_/datasets/power_law_overlay.py',
    '{CONFIGS}/_base_/default_runtime.py',
]
train_dataloader = dict(
    batch_size=8,
    dataset=dict(num_samples=64, pipeline=[dict(type='PackInputs')]))
model = dict(
    type='ImageClassifier',
    data_preprocessor=dict(
        num_classes=10, mean=[118.0] * 3, std=[62.0] * 3, to_rgb=False),
    backbone=dict(
        type='VisionTransformer',
        arch=dict(embed_dims=32, num_layers=1, num_heads=2,
                  feedforward_channels=64),
        img_size=32, patch_size=8),
    head=dict(type='LinearClsHead', num_classes=10, in_channels=32,
              loss=dict(type='CrossEntropyLoss')))
optim_wrapper = dict(optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.05))
param_scheduler = [dict(type='CosineAnnealingLR', T_max=4, by_epoch=False)]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=2)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=1),
    checkpoint=dict(type='CheckpointHook', interval=2, by_epoch=False))
log_processor = dict(by_epoch=False)
"""


def write_config(tmp_path, text: str = TINY_CLASSIFIER,
                 name: str = 'tiny.py') -> str:
    path = osp.join(str(tmp_path), name)
    with open(path, 'w') as f:
        f.write(text)
    return path
