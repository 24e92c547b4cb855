"""Run any shipped config for 2 iterations on the sample data (test helper).

:func:`shrink` makes a config CPU-sized and nothing else: narrower encoders
(ViT width 32 with the config's depth, ResNet stem/base width 8 with its
depth; the same for timm ViTs and ResNets in ``PooledTIMMBackbone``), the
downstream widths that follow from them, small batches (8 for
class-stratified batches, else 4; ``classes_per_batch`` becomes the batch
where it exceeded it), 2 iterations (``max_iters`` or one epoch of 2
batches), no dataloader workers, and small in-memory toy sets and kNN
banks. The pipeline, views, sampler type, algorithm, head, loss, prior,
hooks and optimizer wrapper stay the config's own (the AMP configs'
``DeviceAwareAmpOptimWrapper`` trains with the ``dtype='bfloat16'`` they
write, as on a GPU: bfloat16 autocast without a loss scaler).
Data is read from ``data/`` under the working directory,
where the configs' ``data_root`` settings look (written by
``make_sample_data``).
"""
import glob
import os.path as osp
import re
from typing import Dict, List, Optional

import numpy as np
import torch
from mmengine.config import Config, ConfigDict
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS, MODELS

from tests._configs import CONFIGS

#: Every runnable config (the ``_base_`` fragments are not).
RUNNABLE = sorted(p for p in glob.glob(osp.join(CONFIGS, '**', '*.py'),
                                       recursive=True)
                  if '_base_' not in p)
VIT_TYPES = ('VisionTransformer', 'MSNViT', 'MAEViT', 'Data2VecViT')
VIT_WIDTH = 32
RESNET_WIDTH = 8
#: ResNet depth -> channels of its last stage per unit of base width.
RESNET_OUT = {18: 8, 34: 8, 50: 32, 101: 32, 152: 32}


def config_id(path: str) -> str:
    return osp.relpath(path, CONFIGS)


def _vit_layers(backbone: ConfigDict) -> int:
    init_default_scope('mmpretrain')
    cls = MODELS.get(backbone.type)
    arch = backbone.arch
    table = cls.arch_zoo
    for names, settings in table.items():
        if arch in (names if isinstance(names, (list, tuple)) else [names]):
            return settings['num_layers']
    raise KeyError(f'{backbone.type} has no arch {arch!r}')


def shrink_backbone(backbone: ConfigDict) -> Optional[int]:
    """Narrow a large named-arch backbone in place.

    Returns:
        Its new output width, or None when it was left as it was.
    """
    if backbone.type in VIT_TYPES and isinstance(backbone.get('arch'), str):
        backbone.arch = dict(embed_dims=VIT_WIDTH,
                             num_layers=_vit_layers(backbone), num_heads=2,
                             feedforward_channels=2 * VIT_WIDTH)
        return VIT_WIDTH
    if backbone.type == 'PooledTIMMBackbone':  # timm's own arguments
        kwargs = dict(backbone.get('model_kwargs') or {})
        name = backbone.model_name
        depth = re.match(r'resnet(\d+)$', name)
        if name.startswith('vit_'):
            kwargs.update(embed_dim=VIT_WIDTH, num_heads=2)
            width = VIT_WIDTH
        elif depth and int(depth.group(1)) in RESNET_OUT:
            kwargs.update(stem_width=RESNET_WIDTH,
                          channels=tuple(RESNET_WIDTH * 2**i
                                         for i in range(4)))
            width = RESNET_WIDTH * RESNET_OUT[int(depth.group(1))]
        else:
            return None
        backbone.model_kwargs = kwargs
        return width
    if backbone.type == 'ResNet' and backbone.get('base_channels', 64) > 8:
        backbone.update(stem_channels=RESNET_WIDTH,
                        base_channels=RESNET_WIDTH)
        return RESNET_WIDTH * RESNET_OUT[backbone.depth]
    return None


def shrink_model(cfg: Config) -> None:
    """Narrow the encoder and every width that depends on it."""
    model = cfg.model
    width = shrink_backbone(model.backbone)
    if width is None:
        return
    # a throwaway dict where the model has no neck / head
    neck = model.get('neck') or ConfigDict()
    head = model.get('head') or ConfigDict()
    kind = neck.get('type')
    if kind in ('MSNProjector', ):
        neck.update(in_channels=width, hidden_channels=64, out_channels=32)
        head.in_channels = 32
    elif kind == 'SwAVNeck':
        neck.update(in_channels=width, hid_channels=64, out_channels=32)
        head.in_channels = 32
        for hook in cfg.get('custom_hooks', []):
            if hook.type == 'SwAVHook':
                hook.feat_dim = 32
    elif kind in ('NonLinearNeck', 'MoCoV2Neck'):
        neck.update(in_channels=width, hid_channels=64, out_channels=32)
    elif kind == 'LinearNeck':
        neck.update(in_channels=width, out_channels=width)
    elif kind == 'MAEPretrainDecoder':
        neck.update(embed_dim=width, decoder_embed_dim=32, decoder_depth=1,
                    decoder_num_heads=2)
    elif kind == 'ConcatCLSNeck':
        neck.in_channels = width
        head.in_channels = width * neck.num_layers
    elif kind == 'AdaptivePoolNeck':
        size = neck.get('output_size', 1)
        cells = size * size if isinstance(size, int) else size[0] * size[1]
        head.in_channels = width * cells
        if head.get('bn_channels'):
            head.bn_channels = width
    elif kind is None and head.get('type') == 'MultiLinearProbeHead':
        head.in_channels = width
    elif kind is None and not head:  # a bare encoder (feature benchmarks)
        pass
    else:
        raise NotImplementedError(f'no shrink rule for neck {kind}')


def _loaders(cfg: Config) -> List[ConfigDict]:
    return [cfg.get(name) for name in ('train_dataloader', 'val_dataloader',
                                       'test_dataloader') if cfg.get(name)]


def _shrink_toy_sets(dataset: ConfigDict, size: int) -> None:
    """Fewer in-memory toy images; the first 64 files of a real set in a
    kNN / logistic-regression pass."""
    if dataset.get('type') == 'KNNEvalDataset':
        for part in (dataset.memory, dataset.query):
            _shrink_toy_sets(part, 64)
            if part.get('type') not in ('PowerLawOverlayDataset',
                                        'LowShotDataset'):
                part.indices = 64
    elif dataset.get('type') == 'PowerLawOverlayDataset' and dataset.get(
            'background_source') != 'cifar10':
        dataset.num_samples = size if dataset.get('num_samples') is None \
            else min(dataset.num_samples, size)


def _stratified_indices(dataset_cfg: ConfigDict, k: int,
                        batch: int) -> List[int]:
    """Two batches' worth of images from ``k`` classes (2 * batch / k each),
    so that one epoch of the class-stratified batch sampler is 2 batches."""
    init_default_scope('mmpretrain')
    dataset = DATASETS.build(dict(dataset_cfg, pipeline=[]))
    labels = np.asarray(dataset.get_gt_labels())
    per_class = 2 * batch // k
    classes, counts = np.unique(labels, return_counts=True)
    order = classes[np.argsort(-counts, kind='stable')][:k]
    picked = []
    for c in order:
        members = np.flatnonzero(labels == c)
        picked += list(np.resize(members, per_class))
    return sorted(int(i) for i in picked)


def shrink(cfg: Config, work_dir: str,
           backbone_ckpt: Optional[str] = None) -> Config:
    """CPU-sized copy of ``cfg`` (see the module docstring), in place.

    Args:
        cfg: A loaded config.
        work_dir: The run's work dir.
        backbone_ckpt: Checkpoint for a frozen pretrained encoder
            (``init_cfg`` of a linear-probe backbone and neck).

    Returns:
        ``cfg``.
    """
    cfg.work_dir = work_dir
    shrink_model(cfg)
    # a pretrained full-size checkpoint (the *_from-msn* continuations'
    # converted MSN file) fits no narrowed model; loading a converted
    # checkpoint is tested in tests/test_tools/test_msn_checkpoints.py
    cfg.load_from = None
    for part in ('backbone', 'neck'):
        init = (cfg.model.get(part) or {}).get('init_cfg')
        if isinstance(init, dict) and init.get('type') == 'Pretrained':
            init.checkpoint = backbone_ckpt
    if cfg.get('train_dataloader') is None:  # an evaluation-only config
        cfg.test_dataloader.update(batch_size=4, num_workers=0,
                                   persistent_workers=False)
        _shrink_toy_sets(cfg.test_dataloader.dataset, 64)
        return cfg
    train = cfg.train_dataloader
    batch_sampler = train.get('batch_sampler') or {}
    stratified = batch_sampler.get('type') == 'ClassStratifiedBatchSampler'
    batch = 8 if stratified else 4
    for loader in _loaders(cfg):
        loader.batch_size = batch if loader is train else 4
        loader.num_workers = 0
        loader.persistent_workers = False
        # enough images per class for 2 class-stratified batches of 8
        _shrink_toy_sets(loader.dataset, 200 if stratified else 64)
    for hook in cfg.get('custom_hooks', []):
        if hook.type == 'SwAVHook':
            hook.batch_size = batch
    by_epoch = cfg.train_cfg.get('type') == 'EpochBasedTrainLoop' or (
        cfg.train_cfg.get('by_epoch', False))
    if stratified:
        k = batch_sampler.classes_per_batch
        batch_sampler.classes_per_batch = k if batch % k == 0 else batch
    if by_epoch:
        cfg.train_cfg.max_epochs = 1
        cfg.train_cfg.val_interval = 1
        if stratified:
            train.dataset.indices = _stratified_indices(
                train.dataset, batch_sampler.classes_per_batch, batch)
        else:
            train.num_batch_per_epoch = 2
    else:
        cfg.train_cfg.max_iters = 2
        if cfg.train_cfg.get('val_interval'):
            cfg.train_cfg.val_interval = 2
    cfg.default_hooks.logger.interval = 1
    return cfg


def save_backbone_checkpoint(cfg: Config, path: str) -> Dict:
    """Random weights for the (shrunk) frozen encoder of a probe config,
    saved as an mmengine checkpoint with ``backbone.`` keys (the final norm
    included, as a pretraining checkpoint holds it)."""
    backbone = dict(cfg.model.backbone, init_cfg=None)
    if 'final_norm' in backbone:
        backbone['final_norm'] = True
    backbone.pop('frozen_stages', None)
    init_default_scope('mmpretrain')
    torch.manual_seed(0)
    state = {f'backbone.{k}': v
             for k, v in MODELS.build(backbone).state_dict().items()}
    torch.save(dict(state_dict=state, meta=dict()), path)
    return state
