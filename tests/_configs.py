"""Tiny configs shared by tests (written to tmp dirs at test time)."""
import ast
import os.path as osp
import subprocess
import sys
from typing import Optional

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


# PMSN with everything that draws random numbers: a per-sample random
# transform (numpy), the batched views of BatchAugmentPreprocessor (torch),
# patch-drop masks (mask_ratio > 0), the class-stratified sampler; and
# deterministic kernels, so two runs agree bit for bit.
TINY_PMSN = f"""
_base_ = [
    '{CONFIGS}/_base_/datasets/shapes_digits_overlay.py',
    '{CONFIGS}/_base_/default_runtime.py',
]
batch_size = 8
train_dataloader = dict(
    batch_size=batch_size,
    drop_last=False,  # the batch sampler yields whole batches only
    batch_sampler=dict(type='ClassStratifiedBatchSampler',
                       classes_per_batch=2),
    dataset=dict(num_samples=96, label='background',
                 pipeline=[dict(type='RandomFlip', prob=0.5),
                           dict(type='PackInputs')]))
model = dict(
    type='PMSN',
    data_preprocessor=dict(
        type='BatchAugmentPreprocessor',
        views=[dict(num_views=2, scale=(0.5, 1.0), jitter_prob=0.8,
                    brightness=0.4, contrast=0.4)],
        mean=[105.0],
        std=[58.0], to_rgb=False),
    backbone=dict(
        type='MSNViT',
        arch=dict(embed_dims=16, num_layers=1, num_heads=2,
                  feedforward_channels=32),
        img_size=20, patch_size=4, in_channels=1),
    neck=dict(type='MSNProjector', in_channels=16, hidden_channels=32,
              out_channels=16),
    head=dict(type='PMSNHead', num_prototypes=6, in_channels=16,
              prior=dict(type='UniformPrior'),
              loss=dict(type='PMSNLoss', prior_weight=1.0)),
    num_random_views=1,
    mask_ratio=0.3,
    target_momentum=0.9,
    target_momentum_end=1.0)
optim_wrapper = dict(optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.05))
param_scheduler = [dict(type='CosineAnnealingLR', T_max=6, by_epoch=False)]
train_cfg = dict(type='IterBasedTrainLoop', max_iters=6)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=1),
    checkpoint=dict(type='CheckpointHook', interval=2, by_epoch=False))
log_processor = dict(by_epoch=False)
randomness = dict(seed=0, deterministic=True)
"""


def small_knn_eval(cfg, memory: int = 100, query: int = 40,
                   k: Optional[int] = None) -> None:
    """Shrink the kNN val loop of a toy config: memory and query sizes,
    optionally k of every KNNAccuracy."""
    dataset = cfg.val_dataloader.dataset
    dataset.memory.num_samples = memory
    dataset.query.num_samples = query
    for metric in cfg.val_evaluator:
        if k is not None:
            metric.k = k


def without_val(cfg) -> None:
    """Drop a config's val loop (dataloader, evaluator, loop)."""
    cfg.val_dataloader = cfg.val_evaluator = cfg.val_cfg = None


def modules_after_bare_import(subpackage: str, prefixes: tuple) -> list:
    """The modules loaded by importing ``pmsn_mm.<subpackage>`` alone in a
    fresh interpreter (``pmsn_mm/__init__``, which registers every
    subpackage, skipped) whose names start with one of ``prefixes``.

    Args:
        subpackage: E.g. ``'datasets'``.
        prefixes: E.g. ``('torch.', 'pmsn_mm.models')``; a name equal to a
            prefix without its trailing dot counts too.
    """
    code = (
        'import sys, types\n'
        "pkg = types.ModuleType('pmsn_mm')\n"
        f"pkg.__path__ = [{REPO!r} + '/pmsn_mm']\n"
        "sys.modules['pmsn_mm'] = pkg\n"
        f'import pmsn_mm.{subpackage}\n'
        f'prefixes = {tuple(prefixes)!r}\n'
        'print(sorted(m for m in sys.modules if any(\n'
        "    m.startswith(p) or m == p.rstrip('.') for p in prefixes)))\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])
