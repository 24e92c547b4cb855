"""The evaluation protocol a linear-probe config trains, read as the runner
builds it, and the table it must match (``configs/recipes/evaluation.yaml``).

:func:`resolve_probe_recipe` builds the probe model with mmpretrain's
``MODELS`` registry (on the ``meta`` device: no memory, no initialisation, a
forward pass gives the feature shapes, so even a ViT-L is instant), the
optimizer wrapper and the parameter schedulers with mmengine's builders, and
the transforms with ``TRANSFORMS``; it steps the schedulers through the run
and reads the ``probe_*`` quantities (keys in ``configs/recipes/README.md``)
off the built objects. :func:`expected_probe_recipe` gives the row a config
must match: the evaluation table's values are scoped by dotted prefixes
(family, dataset, family.dataset, encoder, encoder.representation), see
``configs/recipes/evaluation.yaml``. ``tests/test_configs/
test_recipes_evaluation.py`` compares the two for every listed config.

Registration: this module imports :mod:`pmsn_mm.models`,
:mod:`pmsn_mm.datasets` and :mod:`pmsn_mm.engine`, whose classes the probe
configs name; it never imports the package back. Not imported by
``import pmsn_mm``.
"""
import copy
import logging
import math
import os.path as osp
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from mmengine.config import Config, ConfigDict
from mmengine.optim import build_optim_wrapper
from mmengine.registry import init_default_scope
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

import pmsn_mm.datasets  # noqa: F401  (the registered classes)
import pmsn_mm.engine  # noqa: F401
import pmsn_mm.models  # noqa: F401
from .building import quiet_current_logger, scheduler_curves
from .tables import name_batch, round_value, same_value

#: Transforms that read or pack data and change no pixel.
_NO_PIXELS = ('LoadImageFromFile', 'CheckedLoadImageFromFile',
              'PackInputs')
#: torchvision's RandomResizedCrop defaults (VISSL's transforms).
_RRC_SCALE, _RRC_RATIO = (0.08, 1.0), (3 / 4, 4 / 3)
#: (embed dims, depth) of a ViT -> the paper's name.
_VIT_NAMES = {(384, 12): 'vit-small', (768, 12): 'vit-base',
              (1024, 24): 'vit-large'}
#: Keys a probe entry of ``configs`` needs.
ENTRY_KEYS = ('encoder', 'representation', 'dataset')


# ----------------------------------------------------------------- the model
def _meta_module(module_cfg: ConfigDict) -> nn.Module:
    """Build on the meta device, or on the CPU and move there (a ResNet
    calls ``.item()`` while it is built)."""
    from mmpretrain.registry import MODELS
    module_cfg = copy.deepcopy(module_cfg)
    try:
        with torch.device('meta'):
            return MODELS.build(module_cfg)
    except (RuntimeError, NotImplementedError):
        return MODELS.build(module_cfg).to('meta')


def build_probe_model(cfg: Config) -> Tuple[nn.Module, nn.Module]:
    """The probe model of a config on the meta device, and its data
    pre-processor (on the CPU, to read its statistics).

    As mmengine's Runner: ``cfg.data_preprocessor`` is the model's default.
    No checkpoint is loaded and no weight is initialised.
    """
    from mmpretrain.registry import MODELS
    model_cfg = copy.deepcopy(cfg.model)
    preprocessor = dict(model_cfg.get('data_preprocessor') or
                        cfg.get('data_preprocessor') or {})
    preprocessor.setdefault('type', 'ClsDataPreprocessor')
    preprocessor = MODELS.build(preprocessor)
    model_cfg.data_preprocessor = preprocessor
    model_cfg.backbone = _meta_module(model_cfg.backbone)
    with torch.device('meta'):
        model = MODELS.build(model_cfg)
    model.train()  # as the train loop: norm_eval / frozen stages apply
    return model, preprocessor


def _stochastic(module: nn.Module) -> bool:
    """A dropout, drop-path or attention dropout that is active."""
    from mmcv.cnn.bricks.drop import DropPath
    if not module.training:
        return False
    if isinstance(module, nn.Dropout):
        return module.p > 0
    if isinstance(module, DropPath):
        return module.drop_prob > 0
    attn_drop = getattr(module, 'attn_drop', None)
    return isinstance(attn_drop, float) and attn_drop > 0


def _frozen(parts: Sequence[nn.Module]) -> bool:
    """No trainable parameter, no BatchNorm statistics updated and no
    random layer active in the encoder (VISSL: trunk frozen, in eval)."""
    for part in parts:
        if any(p.requires_grad for p in part.parameters()):
            return False
        for m in part.modules():
            if (isinstance(m, _BatchNorm) and m.training) or _stochastic(m):
                return False
    return True


def _encoder(model: nn.Module, feature_dim: int) -> Dict[str, Any]:
    """Architecture and representation of the frozen encoder."""
    # mmpretrain modules: their attributes are not typed
    backbone: Any = model.backbone
    neck: Any = model.neck
    name = type(backbone).__name__
    depth: Optional[int]
    if hasattr(backbone, 'embed_dims') and hasattr(backbone, 'patch_embed'):
        depth = len(backbone.layers)
        width = backbone.embed_dims
        if getattr(backbone, 'out_type', None) != 'cls_token':
            raise ValueError(f'{name}: a ViT probe reads CLS tokens '
                             "(out_type='cls_token'), not "
                             f'{getattr(backbone, "out_type", None)!r}.')
        out = sorted(i % depth for i in backbone.out_indices)
        if neck is None:
            if out != [depth - 1] or not backbone.final_norm:
                raise ValueError(f'{name}: lastCLS needs out_indices=-1 and '
                                 'final_norm=True (VISSL lastCLS is normed).')
            representation = 'lastcls'
        elif type(neck).__name__ == 'ConcatCLSNeck':
            n = neck.num_layers
            if out[-n:] != list(range(depth - n, depth)) or \
                    not neck.final_norm or backbone.final_norm:
                raise ValueError(
                    f'{name}: concat{n}CLS needs the last {n} blocks out, '
                    'the final norm in the neck (final_norm=True) and not '
                    'in the backbone (VISSL norms every token).')
            representation = f'concat{n}cls'
        else:
            raise ValueError(f'no probe representation for {name} + '
                             f'{type(neck).__name__}.')
        return dict(probe_backbone=name,
                    probe_arch=_VIT_NAMES.get((width, depth),
                                              f'vit-{width}x{depth}'),
                    probe_patch_size=backbone.patch_embed.projection
                    .kernel_size[0],
                    probe_representation=representation, probe_pool=None)
    depth = getattr(backbone, 'depth', None)
    if depth is None:
        raise ValueError(f'unknown probe encoder {name}.')
    if type(neck).__name__ != 'AdaptivePoolNeck':
        raise ValueError(f'{name}: a ResNet probe pools its last map with '
                         f'AdaptivePoolNeck, not {type(neck).__name__}.')
    h, w = neck.output_size
    pool = f'AdaptiveAvgPool2d({h})' if h == w else \
        f'AdaptiveAvgPool2d(({h}, {w}))'
    return dict(probe_backbone=name, probe_arch=f'resnet{depth}',
                probe_patch_size=None,
                probe_representation=f'pool{feature_dim}', probe_pool=pool)


def _head_init(init_cfg: Any) -> str:
    if not init_cfg:
        return 'pytorch_default'
    if isinstance(init_cfg, dict) and init_cfg.get('type') == 'Normal':
        return f'normal(std={init_cfg.get("std", 1)})'
    return repr(init_cfg)


def _head(head: Any) -> Dict[str, Any]:
    """The linear probes, their BatchNorm and their loss."""
    name = type(head).__name__
    if name != 'MultiLinearProbeHead':
        raise ValueError(f'a probe config needs MultiLinearProbeHead, not '
                         f'{name}.')
    out = dict(probe_heads=list(head.probe_names),
               probe_num_classes=head.num_classes,
               probe_head_init=_head_init(head.init_cfg),
               probe_bn_affine=None, probe_bn_eps=None,
               probe_bn_momentum=None, probe_bn_channels=None)
    if 'bn_linear' in head.probes:
        bn = head.probes['bn_linear'].bn
        out.update(probe_bn_affine=bn.affine, probe_bn_eps=bn.eps,
                   probe_bn_momentum=bn.momentum,
                   probe_bn_channels=bn.num_features)
    loss = head.loss_module
    plain_ce = (type(loss).__name__ == 'CrossEntropyLoss'
                and not getattr(loss, 'use_sigmoid', False)
                and not getattr(loss, 'use_soft', False)
                and getattr(loss, 'class_weight', None) is None)
    out['probe_loss'] = 'cross_entropy' if plain_ce else type(loss).__name__
    return out


# ------------------------------------------------- optimizer and schedules
def _groups(optimizer: torch.optim.Optimizer) -> Dict[int, dict]:
    return {id(p): g for g in optimizer.param_groups for p in g['params']}


def _optimizer(cfg: Config, model: Any) -> Tuple[Dict[str, Any], Any]:
    """Optimizer settings of the probes' parameters, as built."""
    with quiet_current_logger(logging.ERROR):  # a line per frozen parameter
        wrapper = build_optim_wrapper(model,
                                      copy.deepcopy(cfg.optim_wrapper))
    optimizer = wrapper.optimizer
    groups = _groups(optimizer)
    linear = model.head.probes['linear'] if 'linear' in model.head.probes \
        else model.head.probes['bn_linear'].fc
    group = groups[id(linear.weight)]
    bn_decay = None
    if 'bn_linear' in model.head.probes:
        bn = model.head.probes['bn_linear'].bn
        if bn.affine:
            bn_decay = groups[id(bn.weight)]['weight_decay']
    out = dict(probe_optimizer=type(optimizer).__name__,
               probe_lr=group['lr'],
               probe_momentum=group.get('momentum'),
               probe_nesterov=group.get('nesterov'),
               probe_weight_decay=group['weight_decay'],
               probe_bias_weight_decay=groups[id(
                   linear.bias)]['weight_decay'],
               probe_bn_weight_decay=bn_decay)
    return out, wrapper


def _lr_curve(cfg: Config, wrapper: Any) -> Tuple[List[float], str]:
    """The lr of every epoch of the run (schedulers built and stepped as the
    runner's ParamSchedulerHook does), and the update interval."""
    schedulers = cfg.get('param_scheduler') or []
    if isinstance(schedulers, dict):
        schedulers = [schedulers]
    by_epoch = all(s.get('by_epoch', True)
                   and not s.get('convert_to_iter_based', False)
                   for s in schedulers)
    curve, _, _ = scheduler_curves(schedulers,
                                   wrapper.optimizer.param_groups[0],
                                   cfg.train_cfg.max_epochs)
    return curve, 'epoch' if by_epoch else 'iter'


def name_lr_schedule(curve: List[float]) -> Dict[str, Any]:
    """Name a per-epoch lr curve: VISSL's multistep or cosine.

    Args:
        curve: The lr of every epoch.

    Raises:
        ValueError: If it is neither.
    """
    start, n = curve[0], len(curve)
    steps = [e for e in range(1, n)
             if not math.isclose(curve[e], curve[e - 1], rel_tol=1e-9)]
    ratios = {round_value(curve[e] / curve[e - 1]) for e in steps}
    if len(ratios) <= 1:
        return dict(probe_schedule='multistep' if steps else 'constant',
                    probe_milestones=steps or None,
                    probe_gamma=ratios.pop() if ratios else None,
                    probe_lr_end=None)
    # cosine from `start` at epoch 0 to `end` at epoch n (never reached)
    c = (1 + math.cos(math.pi / n)) / 2
    end = (curve[1] - start * c) / (1 - c)
    cosine = [end + (start - end) * (1 + math.cos(math.pi * e / n)) / 2
              for e in range(n)]
    if all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
           for a, b in zip(curve, cosine)):
        return dict(probe_schedule='cosine', probe_milestones=None,
                    probe_gamma=None, probe_lr_end=round_value(end))
    raise ValueError(f'the lr curve {curve} is neither multistep nor '
                     'cosine.')


# ---------------------------------------------------------------- the data
def _unwrap(dataset: ConfigDict) -> Tuple[ConfigDict, str]:
    """The dataset under a LowShotDataset, and the subset it keeps."""
    if dataset.get('type') != 'LowShotDataset':
        return dataset, 'full'
    if dataset.get('list_file'):
        subset = f'list:{osp.basename(dataset.list_file)}'
    elif dataset.get('fraction') is not None:
        subset = f'per_class:{dataset.fraction:g}'
    else:
        subset = f'per_class_images:{dataset.images_per_class}'
    return dataset.dataset, subset


def describe_transform(transform: Any) -> Optional[str]:
    """One built transform as a short string (None: changes no pixel).

    ``RandomResizedCrop(224, bicubic)``, ``HorizontalFlip(0.5)``,
    ``Resize(256, short, bilinear)`` (short edge), ``Resize(224x224,
    bilinear)`` (exact size), ``CenterCrop(224)``; the torchvision defaults
    of VISSL are implied (crop area (0.08, 1), ratio (3/4, 4/3), PIL), other
    settings are appended.

    Raises:
        ValueError: For a transform it cannot describe.
    """
    name = type(transform).__name__
    if name in _NO_PIXELS:
        return None
    extra = []
    backend = getattr(transform, 'backend', 'pillow')
    if name == 'RandomResizedCrop':
        h, w = transform.scale
        if tuple(transform.crop_ratio_range) != _RRC_SCALE:
            extra.append(f'scale={tuple(transform.crop_ratio_range)}')
        if not all(math.isclose(a, b) for a, b in zip(
                transform.aspect_ratio_range, _RRC_RATIO)):
            extra.append(f'ratio={tuple(transform.aspect_ratio_range)}')
        size = h if h == w else f'{h}x{w}'
        text = f'RandomResizedCrop({size}, {transform.interpolation}'
    elif name == 'RandomFlip':
        if transform.direction != 'horizontal':
            raise ValueError(f'flip direction {transform.direction!r}')
        return f'HorizontalFlip({transform.prob:g})'
    elif name == 'ResizeEdge':
        text = (f'Resize({transform.scale}, {transform.edge}, '
                f'{transform.interpolation}')
    elif name == 'Resize' and not transform.keep_ratio and \
            transform.scale is not None:
        w, h = transform.scale
        text = f'Resize({h}x{w}, {transform.interpolation}'
    elif name == 'CenterCrop':
        h, w = transform.crop_size
        return f'CenterCrop({h})' if h == w else f'CenterCrop({h}x{w})'
    else:
        raise ValueError(f'no description for the transform {name} '
                         f'({vars(transform)}).')
    if backend != 'pillow':
        extra.append(backend)
    return text + ''.join(f', {e}' for e in extra) + ')'


def describe_pipeline(pipeline: Sequence[dict]) -> List[str]:
    """A pipeline config, built with ``TRANSFORMS``, as short strings."""
    from mmpretrain.registry import TRANSFORMS
    built = [TRANSFORMS.build(copy.deepcopy(t)) for t in pipeline]
    return [d for d in map(describe_transform, built) if d is not None]


def _data(cfg: Config) -> Dict[str, Any]:
    train, subset = _unwrap(cfg.train_dataloader.dataset)
    test = {}
    for name in ('val_dataloader', 'test_dataloader'):
        dataset, _ = _unwrap(cfg[name].dataset)
        test[name] = describe_pipeline(dataset.pipeline)
    if test['val_dataloader'] != test['test_dataloader']:
        raise ValueError('val and test transforms differ: '
                         f'{test["val_dataloader"]} / '
                         f'{test["test_dataloader"]}.')
    topk = {tuple(cfg[name].get('topk', (1, 5)))
            for name in ('val_evaluator', 'test_evaluator')}
    types = {cfg[name].type for name in ('val_evaluator', 'test_evaluator')}
    if len(topk) != 1 or types != {'MultiHeadAccuracy'}:
        raise ValueError('val and test must both be MultiHeadAccuracy with '
                         f'the same topk, not {types} / {topk}.')
    return dict(probe_train_subset=subset,
                probe_train_transform=describe_pipeline(train.pipeline),
                probe_test_transform=test['val_dataloader'],
                probe_topk=list(topk.pop()))


def _batches(cfg: Config) -> Dict[str, Any]:
    """Global train / test batches from the name ``{N}xb{B}``."""
    gpus, per_gpu = name_batch(cfg.filename or '',
                               cfg.train_dataloader.batch_size)
    return dict(probe_batch=gpus * per_gpu,
                probe_test_batch=gpus * cfg.val_dataloader.batch_size,
                probe_lr_base_batch=(cfg.get('auto_scale_lr') or
                                     {}).get('base_batch_size'))


def resolve_probe_recipe(cfg: Config) -> Dict[str, Any]:
    """Every ``probe_*`` quantity of a linear-probe config, as built.

    Args:
        cfg: The config, loaded with ``Config.fromfile`` (its file name
            gives the GPUs of ``{N}xb{B}``).

    Returns:
        ``probe_*`` -> value (floats rounded to 12 digits, tuples as lists).

    Raises:
        ValueError: If the config is not a linear probe this module can
            read (the message says what is missing).
    """
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    model: Any  # an mmpretrain classifier: its attributes are not typed
    preprocessor: Any
    model, preprocessor = build_probe_model(cfg)
    with torch.no_grad():
        feats = model.extract_feat(
            torch.empty(2, 3, 224, 224, device='meta'))
    feature_dim = feats[-1].shape[1]
    if model.head.in_channels != feature_dim:
        raise ValueError(f'the head reads {model.head.in_channels} features, '
                         f'the encoder gives {feature_dim}.')
    out: Dict[str, Any] = _encoder(model, feature_dim)
    parts = [model.backbone] + ([model.neck] if model.neck else [])
    out.update(probe_feature_dim=feature_dim,
               probe_frozen_trunk=_frozen(parts),
               probe_sync_bn=bool(cfg.get('sync_bn')))
    out.update(_head(model.head))
    classes = getattr(preprocessor, 'num_classes', None)
    if classes is not None and classes != model.head.num_classes:
        raise ValueError(f'data_preprocessor.num_classes={classes} but the '
                         f'head has {model.head.num_classes}.')
    # pixel statistics on VISSL's [0, 1] scale (stored as float32 x 255)
    out.update(probe_mean=[round(float(v) / 255, 4)
                           for v in preprocessor.mean.flatten()],
               probe_std=[round(float(v) / 255, 4)
                          for v in preprocessor.std.flatten()])
    optim, wrapper = _optimizer(cfg, model)
    out.update(optim)
    curve, update = _lr_curve(cfg, wrapper)
    out.update(probe_epochs=cfg.train_cfg.max_epochs, probe_lr_update=update)
    out.update(name_lr_schedule(curve))
    out.update(_batches(cfg))
    out.update(_data(cfg))
    return {k: round_value(v) for k, v in out.items()}


# ------------------------------------------------------- the evaluation table
def load_evaluation_table(path: str) -> dict:
    """``configs/recipes/evaluation.yaml``, checked for shape.

    Raises:
        ValueError: For unknown top-level keys or a probe entry without its
            ``encoder``, ``representation`` and ``dataset``.
    """
    import yaml
    with open(path) as f:
        table = yaml.safe_load(f) or {}
    unknown = set(table) - {'experiment', 'title', 'paper', 'configs',
                            'values', 'deviations', 'notes'}
    if unknown:
        raise ValueError(f'{path}: unknown keys {sorted(unknown)}.')
    for config, entry in (table.get('configs') or {}).items():
        missing = [k for k in ENTRY_KEYS if not (entry or {}).get(k)]
        if missing:
            raise ValueError(f'{path}: {config} lacks {missing}.')
    table.setdefault('values', {})
    table.setdefault('deviations', {})
    return table


def family_of(table: dict, encoder: str) -> str:
    """``vit`` or ``resnet``, from the encoder's ``probe_arch`` value."""
    arch = (table['values'].get(f'{encoder}.probe_arch') or {}).get('value')
    if arch is None:
        raise ValueError(f'values has no {encoder}.probe_arch.')
    return 'resnet' if str(arch).startswith('resnet') else 'vit'


def scopes_of(table: dict, config: str) -> List[str]:
    """The scope prefixes that apply to a config, most general first.

    ``''``, the family, each dataset (a low-shot subset after its full
    dataset), each ``family.dataset``, the encoder, ``encoder.representation``.
    """
    entry = table['configs'][config]
    enc, rep, data = (entry[k] for k in ENTRY_KEYS)
    names = [data] if isinstance(data, str) else list(data)
    fam = family_of(table, enc)
    return (['', fam] + names + [f'{fam}.{d}' for d in names] +
            [enc, f'{enc}.{rep}'])


def split_key(key: str) -> Tuple[str, str]:
    """``'vit.in1k.probe_lr'`` -> ``('vit.in1k', 'probe_lr')``."""
    scope, _, quantity = key.rpartition('.')
    return scope, quantity


def expected_probe_recipe(table: dict, config: str) -> Dict[str, dict]:
    """The row of one probe config: ``{quantity: entry}``.

    Values of the config's scopes (most general first, then the config's own
    ``values``) make the row; each deviation of those scopes (then the
    config's own) replaces the value of its key: the entry becomes
    ``{value, reason, recipe}`` with ``recipe`` the replaced value.

    Raises:
        ValueError: If an entry lacks its value and source (or reason), a
            deviation has no value to replace or equals it.
    """
    scopes = scopes_of(table, config)
    own = table['configs'][config]
    rows: Dict[str, dict] = {}
    for level, source in ((s, table['values']) for s in scopes):
        for key, entry in source.items():
            scope, quantity = split_key(key)
            if scope == level:
                rows[quantity] = dict(entry, key=key)
    for key, entry in (own.get('values') or {}).items():
        rows[key] = dict(entry, key=f'{config}:{key}')
    for key, entry in rows.items():
        if 'value' not in entry or not entry.get('source'):
            raise ValueError(f'{entry["key"]} needs a value and a source.')
    deviations = [(key, entry) for s in scopes
                  for key, entry in table['deviations'].items()
                  if split_key(key)[0] == s]
    deviations += [(f'{config}:{k}', e)
                   for k, e in (own.get('deviations') or {}).items()]
    for key, entry in deviations:
        quantity = split_key(key.split(':')[-1])[1]
        if not isinstance(entry, dict) or 'value' not in entry or \
                not entry.get('reason'):
            raise ValueError(f'deviation {key} needs a value and a reason.')
        if quantity not in rows:
            raise ValueError(f'deviation {key} replaces no value.')
        recipe = rows[quantity]['value']
        if same_value(recipe, entry['value']):
            raise ValueError(f'deviation {key} = {entry["value"]!r} equals '
                             'the value it replaces.')
        rows[quantity] = dict(entry, key=key, recipe=recipe)
    return rows
