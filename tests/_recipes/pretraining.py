"""The recipe a pretraining config trains, read as the runner builds it.

:func:`resolve_recipe` builds the model (backbone, neck, head, loss, prior,
data pre-processor), the optimizer wrapper and the parameter schedulers of a
config with mmengine's and mmpretrain's registries, steps the schedulers
through the whole run on a short epoch, and reads the quantities of the
recipe tables (``configs/recipes/*.yaml``, keys in
``configs/recipes/README.md``) off the built objects and the dataloader
config. ``tests/test_configs/test_recipes.py`` compares them with the tables
(:func:`tests._recipes.expected_recipe`).

Registration: this module imports :mod:`pmsn_mm.models` and
:mod:`pmsn_mm.engine`, whose classes the configs name (importing any
``pmsn_mm`` submodule runs ``pmsn_mm/__init__`` first, which registers the
rest); it never imports the package back. Not imported by ``import pmsn_mm``
(it builds whole models).
"""
import copy
from typing import Any, Dict, List, Optional, Sequence

import torch
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS
from torch import nn

from pmsn_mm import engine, models  # noqa: F401  (the registered classes)
from pmsn_mm.views import pipeline_recipe_fields, recipe_fields
from .building import (plain_optim_wrapper_cfg, quiet_current_logger,
                       scheduler_curves, training_precision)
from .tables import name_batch, round_value

#: Epoch length used to step epoch-based schedulers (any length gives the
#: same epochs; 8 keeps MSN's 1.25 x 300 and every warm-up whole).
EPOCH_LENGTH = 8

#: Width of a ViT (embed dims) -> the paper's name.
VIT_WIDTHS = {192: 'vit-tiny', 384: 'vit-small', 768: 'vit-base',
              1024: 'vit-large'}


def global_batch(cfg: Config, path: str) -> int:
    """Per-GPU batch x the GPUs of the config name ``{N}xb{B}``.

    Args:
        cfg: The config.
        path: Its file.

    Raises:
        ValueError: If the name has no ``NxbB`` or ``B`` differs from the
            dataloader's ``batch_size``.
    """
    gpus, per_gpu = name_batch(path, cfg.train_dataloader.batch_size)
    return gpus * per_gpu


# --------------------------------------------------------------- model parts
def _architecture(backbone: Any) -> Dict[str, Any]:
    # ``backbone``: an mmpretrain or timm module, its attributes untyped
    timm_model = getattr(backbone, 'timm_model', None)  # PooledTIMMBackbone
    if timm_model is not None:
        patch = getattr(getattr(timm_model, 'patch_embed', None),
                        'patch_size', None)
        if patch is not None:  # a timm ViT: named by its width
            width = int(timm_model.embed_dim)
            return dict(arch=VIT_WIDTHS.get(width, f'vit-{width}d'),
                        patch_size=int(patch[0]))
        return dict(arch=backbone.model_name, patch_size=None)
    if hasattr(backbone, 'embed_dims') and hasattr(backbone, 'patch_embed'):
        patch = backbone.patch_embed.projection.kernel_size[0]
        return dict(arch=VIT_WIDTHS.get(backbone.embed_dims,
                                        f'vit-{backbone.embed_dims}d'),
                    patch_size=patch)
    depth = getattr(backbone, 'depth', None)
    if depth is not None:
        return dict(arch=f'resnet{depth}', patch_size=None)
    return dict(arch=type(backbone).__name__, patch_size=None)


def linear_widths(module: Optional[nn.Module]) -> Optional[List[int]]:
    """``[in, out of each Linear ...]`` of a projector/expander (or None)."""
    if module is None:
        return None
    linears = [m for m in module.modules() if isinstance(m, nn.Linear)]
    if not linears:
        return None
    return [linears[0].in_features] + [m.out_features for m in linears]


def _prior(prior: nn.Module) -> Dict[str, Any]:
    name = type(prior).__name__
    kinds = {'UniformPrior': 'uniform', 'PowerLawPrior': 'power_law',
             'ClassPrior': 'class', 'AdaptivePowerLawPrior': 'adaptive',
             'FilePrior': 'file'}
    tau = getattr(prior, 'tau', None)
    if isinstance(tau, torch.Tensor):
        tau = float(tau)
    return dict(prior=kinds.get(name, name),
                tau=None if tau is None else float(tau))


def _head(model: nn.Module) -> Dict[str, Any]:
    head = getattr(model, 'head', None)
    out: Dict[str, Any] = {}
    loss = getattr(model, 'loss_module', None)  # VICReg: no head
    if loss is not None and hasattr(loss, 'invariance_weight'):
        out['vicreg_coeffs'] = [float(loss.invariance_weight),
                                float(loss.variance_weight),
                                float(loss.covariance_weight)]
    if head is None:
        return out
    name = type(head).__name__
    if name in ('PMSNHead', 'PSwAVHead'):
        out['num_prototypes'] = head.num_prototypes
        out.update(_prior(head.prior))
        loss = head.loss_module
        if name == 'PMSNHead':
            out.update(
                temperature=float(head.temperature),
                label_smoothing=float(head.label_smoothing),
                sharpen_temperature=float(loss.sharpen_temperature),
                prior_weight=float(loss.prior_weight),
                sinkhorn=bool(loss.use_sinkhorn))
        else:  # PSwAVHead: SwAV's settings live in its loss
            out.update(temperature=float(loss.temperature),
                       swav_epsilon=float(loss.epsilon),
                       sinkhorn_iterations=int(loss.sinkhorn_iterations))
    elif hasattr(head, 'temperature'):  # mmpretrain ContrastiveHead
        out['loss_temperature'] = float(head.temperature)
    if hasattr(head, 'norm_pix'):
        out['norm_pix_loss'] = bool(head.norm_pix)
    return out


def _ema(model: nn.Module, epochs: float) -> Dict[str, Any]:
    target = getattr(model, 'target_net', None)
    if target is None or not hasattr(target, 'momentum'):
        return dict(ema_momentum=None, ema_momentum_end=None, ema_epochs=None)
    start = 1.0 - float(target.momentum)
    end = 1.0 - float(getattr(target, 'end_momentum', target.momentum))
    scale = getattr(target, 'schedule_scale', None)
    length = None if start == end or scale is None else scale * epochs
    return dict(ema_momentum=round_value(start),
                ema_momentum_end=round_value(end),
                ema_epochs=round_value(length))


# --------------------------------------------------------------------- views
# The rows of a view group are its augmentations' (pmsn_mm/views/, one unit
# each): this module names none of them.
def _device_views(preprocessor: Any) -> List[Dict[str, Any]]:
    """The pre-processor's checked view groups as table rows, by its
    augmentations (``recipe_fields``)."""
    return [recipe_fields(group, preprocessor.augments)
            for group in preprocessor.views]


def _pipeline_views(pipeline: Sequence[dict]) -> List[Dict[str, Any]]:
    for t in pipeline:
        if t['type'].split('.')[-1] == 'MultiView':
            nums = t['num_views']
            lists = t['transforms']
            if isinstance(nums, int):
                nums = [nums] * len(lists) if len(lists) > 1 else [nums]
            groups = []
            for num, transforms in zip(nums, lists):
                view = pipeline_recipe_fields(transforms)
                view['num_views'] = num
                groups.append(view)
            return _merge_equal(groups)
    return [pipeline_recipe_fields(pipeline)]


def _merge_equal(groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Adjacent groups with the same transforms are one group."""
    merged: List[Dict[str, Any]] = []
    for group in groups:
        if merged and {k: v for k, v in merged[-1].items()
                       if k != 'num_views'} \
                == {k: v for k, v in group.items() if k != 'num_views'}:
            merged[-1]['num_views'] += group['num_views']
        else:
            merged.append(dict(group))
    return merged


def view_rows(model: nn.Module, cfg: Config) -> Dict[str, Any]:
    """The ``views.<i>.<field>`` rows of a built model and its config: the
    view groups of its ``BatchAugmentPreprocessor``, else of the per-sample
    pipeline of ``cfg.train_dataloader`` (one group per ``MultiView``
    branch, equal neighbours merged); each augmentation makes its own rows
    (:func:`pmsn_mm.views.recipe_fields`,
    :func:`pmsn_mm.views.pipeline_recipe_fields`).

    Args:
        model: The built model.
        cfg: Its config.
    """
    preprocessor = getattr(model, 'data_preprocessor', None)
    if hasattr(preprocessor, 'views'):
        groups = _device_views(preprocessor)
    else:
        groups = _pipeline_views(cfg.train_dataloader.dataset.pipeline)
    return {f'views.{i}.{field}': round_value(value)
            for i, group in enumerate(groups)
            for field, value in group.items()}


# ------------------------------------------------------ optimizer, schedules
def _schedules(cfg: Config, optimizer: torch.optim.Optimizer,
               iters_per_epoch: int, total_iters: int) -> Dict[str, Any]:
    source = max(optimizer.param_groups, key=lambda g: g['weight_decay'])
    lrs, wds, built = scheduler_curves(cfg.get('param_scheduler'), source,
                                       total_iters, iters_per_epoch)
    out: Dict[str, Any] = dict(
        lr=round_value(max(lrs)), warmup_start_lr=round_value(lrs[0]),
        warmup_epochs=0, lr_schedule='constant', final_lr=None,
        lr_schedule_epochs=None,
        weight_decay=round_value(wds[0]), weight_decay_end=round_value(wds[0]),
        weight_decay_schedule='constant', weight_decay_epochs=None,
        _lr_curve=lrs, _wd_curve=wds, _iters_per_epoch=iters_per_epoch)
    for scheduler in built:
        kind = type(scheduler).__name__
        param = getattr(scheduler, 'param_name', 'lr')
        if kind == 'LinearLR':
            out['warmup_epochs'] = round_value(
                (scheduler.end - scheduler.begin) / iters_per_epoch)
            continue
        if not kind.startswith('CosineAnnealing'):
            if param == 'lr' and kind in ('MultiStepLR', 'StepLR'):
                out['lr_schedule'] = 'step'
            continue
        eta_min = scheduler.eta_min
        if eta_min is None:  # eta_min_ratio
            eta_min = scheduler.eta_min_ratio * scheduler.base_values[0]
        reach = (scheduler.begin + scheduler.T_max) / iters_per_epoch
        if param == 'lr':
            out.update(lr_schedule='cosine', final_lr=round_value(eta_min),
                       lr_schedule_epochs=round_value(reach),
                       lr_schedule_start_epoch=round_value(
                           scheduler.begin / iters_per_epoch))
        elif param == 'weight_decay':
            out.update(weight_decay_schedule='cosine',
                       weight_decay_end=round_value(eta_min),
                       weight_decay_epochs=round_value(reach))
    return out


def _optimizer(cfg: Config, model: nn.Module) -> Dict[str, Any]:
    wrapper = build_optim_wrapper(model, plain_optim_wrapper_cfg(cfg))
    opt = wrapper.optimizer
    defaults = opt.defaults
    clip = cfg.optim_wrapper.get('clip_grad')
    # the algorithm: a pmsn_mm variant (SyncFreeLARS) by its upstream class
    algorithm = next(k for k in type(opt).__mro__
                     if not k.__module__.startswith('pmsn_mm.'))
    return dict(
        optimizer=algorithm.__name__,
        betas=round_value(defaults.get('betas')),
        momentum=round_value(defaults.get('momentum')),
        clip_grad=None if not clip else round_value(clip.get('max_norm')),
        precision=training_precision(cfg),
        _optimizer=opt)


# --------------------------------------------------------------- data, loops
def _sampler(cfg: Config) -> Dict[str, Any]:
    loader = cfg.train_dataloader
    batch_sampler = loader.get('batch_sampler') or {}
    sampler = loader.get('sampler') or {}
    out = dict(sampler=sampler.get('type', 'DefaultSampler').split('.')[-1],
               sampler_k=None, sampler_replacement=None)
    if 'power' in sampler:
        out['sampler_power'] = sampler['power']
    if batch_sampler.get('type', '').endswith('ClassStratifiedBatchSampler'):
        out.update(sampler='ClassStratifiedBatchSampler',
                   sampler_k=batch_sampler['classes_per_batch'],
                   sampler_replacement=bool(
                       batch_sampler.get('replacement', False)))
    return out


def _length(cfg: Config, batch: int) -> Dict[str, Any]:
    train_cfg = cfg.train_cfg
    if 'max_epochs' in train_cfg:
        epochs = train_cfg.max_epochs
        return dict(epochs=epochs, _iters_per_epoch=EPOCH_LENGTH,
                    _total_iters=epochs * EPOCH_LENGTH)
    per_gpu = cfg.train_dataloader.batch_size
    num = cfg.train_dataloader.dataset.get('num_samples')
    if not num:
        raise ValueError('an iteration-based config needs '
                         'train_dataloader.dataset.num_samples to count '
                         'its epochs.')
    per_epoch = num // per_gpu
    return dict(epochs=round_value(train_cfg.max_iters / per_epoch),
                _iters_per_epoch=per_epoch, _total_iters=train_cfg.max_iters)


def resolve_recipe(path: str) -> Dict[str, Any]:
    """The quantities of the recipe tables that a config trains.

    Builds the model, optimizer wrapper and schedulers with the registries
    (the working directory must hold any data the model reads at build time,
    e.g. the annotations of ``ClassPrior``).

    Args:
        path: A pretraining config file.

    Returns:
        ``{quantity: value}`` with the keys of ``configs/recipes/README.md``
        (floats rounded to 12 digits), plus ``_lr_curve`` / ``_wd_curve``
        (the lr and weight decay of a decayed parameter group at every
        iteration) and ``_iters_per_epoch`` for curve checks.
    """
    cfg = Config.fromfile(path)
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    model_cfg = copy.deepcopy(cfg.model)
    if cfg.get('data_preprocessor') is not None:  # as mmengine's Runner
        model_cfg.setdefault('data_preprocessor',
                             copy.deepcopy(cfg.data_preprocessor))
    with quiet_current_logger():  # not the optimizer's per-param lines
        return _resolve(cfg, path, MODELS.build(model_cfg))


def _resolve(cfg: Config, path: str, model: Any) -> Dict[str, Any]:
    # ``model``: an mmpretrain model, its attributes untyped
    out: Dict[str, Any] = {}
    out.update(_architecture(model.backbone))
    out['global_batch'] = global_batch(cfg, path)
    auto = cfg.get('auto_scale_lr') or {}
    out['auto_scale_base_batch'] = auto.get('base_batch_size')
    length = _length(cfg, out['global_batch'])
    out.update(length)
    out.update(_sampler(cfg))
    out.update(_head(model))
    if hasattr(model, 'mask_ratio'):
        out['mask_ratio'] = round_value(float(model.mask_ratio))
    elif hasattr(model.backbone, 'mask_ratio'):  # MAE
        out['mask_ratio'] = round_value(float(model.backbone.mask_ratio))
    if hasattr(model, 'target_layers'):  # data2vec
        backbone = cfg.model.backbone
        out.update(
            target_layers=list(model.target_layers),
            smooth_l1_beta=round_value(float(model.loss_beta)),
            drop_path_rate=round_value(backbone.get('drop_path_rate', 0.0)),
            layer_scale_init_value=round_value(
                backbone.get('layer_scale_init_value')),
            attn_drop_rate=round_value(
                (backbone.get('layer_cfgs') or {}).get('attn_drop_rate',
                                                       0.0)))
        for t in cfg.train_dataloader.dataset.pipeline:
            if t['type'].endswith('BEiTMaskGenerator'):
                out['mask_patches'] = t['num_masking_patches']
                out['mask_block_patches'] = [t['min_num_patches'],
                                             t['max_num_patches']]
    for hook in cfg.get('custom_hooks') or []:
        if hook['type'].split('.')[-1] == 'SwAVHook':
            out.update(
                queue_length=hook.get('queue_length', 0),
                queue_start_epoch=hook.get('epoch_queue_starts', 15),
                freeze_prototypes_iters=(hook.get('frozen_layers_cfg')
                                         or {}).get('prototypes'))
    # MAE's neck is its decoder, not a projector
    out['projector'] = None if type(model).__name__ == 'MAE' else \
        linear_widths(getattr(model, 'neck', None))
    out.update(_ema(model, length['epochs']))
    out.update(view_rows(model, cfg))
    optim = _optimizer(cfg, model)
    out.update(_schedules(cfg, optim.pop('_optimizer'),
                          length['_iters_per_epoch'], length['_total_iters']))
    out.update(optim)
    return out
