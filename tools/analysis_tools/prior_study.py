"""The toy prior study of paper §5.1 / Fig. 3 as functions: the config of
one run (prior, KL direction, seed, study settings), its final kNN / NMI /
usage numbers, the summary table and the time estimate.
``prior_toy_study.py`` beside it runs them (one process per run where
several share a device) and draws the figures.
"""
import copy
import math
import os.path as osp
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from mmengine.config import Config

from pmsn_mm.engine.optimizers import set_amp

#: Priors a study compares: ``power-law`` / ``adaptive`` keep the config's
#: prior where it is of that kind, otherwise the prior is replaced by this.
PRIORS = {'power-law': None, 'uniform': dict(type='UniformPrior'),
          'adaptive': dict(type='AdaptivePowerLawPrior')}
#: ``PMSNLoss`` KL directions: ``forward`` = KL(p̄‖prior) (paper, eq. 3).
KL_DIRECTIONS = ('forward', 'reverse')
#: The toy set's labels: the power-law digit, the uniform background.
LABELS = dict(digit='digit_label', background='background_label')
#: Where the toy job keeps its datasets (all get the dataset options).
DATASET_KEYS = ('train_dataloader.dataset', 'knn_train_dataset',
                'knn_test_dataset', 'val_dataloader.dataset.memory',
                'val_dataloader.dataset.query')
#: Columns of the summary table: ``(metric key, heading)``.
COLUMNS = [('knn_digit_backbone', 'digit kNN (CLS)'),
           ('knn_background_backbone', 'background kNN (CLS)'),
           ('knn_digit_neck', 'digit kNN (proj.)'),
           ('knn_background_neck', 'background kNN (proj.)'),
           ('nmi_digit', 'NMI digit'), ('nmi_background', 'NMI background'),
           ('nmi_brightness', 'NMI brightness'),
           ('kl_mean_probs_prior', 'KL(p̄‖prior)'),
           ('mean_anchor_entropy', 'mean H(p_i)'),
           ('mean_probs_entropy', 'H(p̄)'), ('prior_tau', 'prior tau')]


def run_name(prior: str, kl_direction: str) -> str:
    """``'uniform'``, ``'uniform-reverse-kl'``, ..."""
    return prior if kl_direction == 'forward' else f'{prior}-reverse-kl'


def run_dir(work_dir: str, prior: str, kl_direction: str, seed: int) -> str:
    """A run's folder: ``<work_dir>/<run_name>/seed<seed>``."""
    return osp.join(work_dir, run_name(prior, kl_direction), f'seed{seed}')


def _get(cfg, key: str):
    for part in key.split('.'):
        cfg = cfg.get(part) if cfg is not None else None
    return cfg


def set_dataset_options(cfg: Config, options: dict) -> None:
    """Set the same options on every toy dataset of ``cfg``
    (:data:`DATASET_KEYS` that it has), in place.

    Args:
        cfg: A toy-set config.
        options: ``{key: value}`` (dotted keys allowed), e.g.
            ``{'digit_size': 12}``.
    """
    present = [key for key in DATASET_KEYS if _get(cfg, key) is not None]
    if 'train_dataloader.dataset' not in present:
        raise ValueError('dataset options need a config with '
                         'train_dataloader.dataset (the toy set).')
    cfg.merge_from_dict({f'{key}.{name}': value for key in present
                         for name, value in options.items()})


def scale_schedule(cfg: Config, max_iters: int) -> None:
    """Rescale an iteration-based schedule to ``max_iters``, in place: the
    param schedulers, a learned prior's ``warmup_updates`` and SwAVHook's
    prototype freezing.

    Args:
        cfg: A config with ``train_cfg.max_iters``.
        max_iters: The new length.
    """
    ratio = max_iters / cfg.train_cfg.max_iters
    cfg.train_cfg.max_iters = max_iters
    for sched in cfg.param_scheduler:
        if 'begin' in sched:
            sched['begin'] = int(round(sched['begin'] * ratio))
        if 'end' in sched:
            sched['end'] = max(sched.get('begin', 0) + 1,
                               int(round(sched['end'] * ratio)))
        if 'T_max' in sched:
            sched['T_max'] = max(1, int(round(sched['T_max'] * ratio)))
    if cfg.default_hooks.get('checkpoint') is not None:
        cfg.default_hooks.checkpoint['interval'] = max_iters
    prior = cfg.model.head.get('prior') or {}
    if prior.get('warmup_updates'):
        prior['warmup_updates'] = int(round(prior['warmup_updates'] * ratio))
    for hook in cfg.get('custom_hooks', None) or []:
        frozen = hook.get('frozen_layers_cfg') or {}
        for name, iters in frozen.items():
            frozen[name] = int(round(iters * ratio))


def study_config(config: Union[str, Config],
                 prior: str,
                 kl_direction: str,
                 seed: int,
                 work_dir: str,
                 cfg_options: Optional[dict] = None,
                 data_options: Optional[dict] = None,
                 max_iters: Optional[int] = None,
                 max_batch_size: Optional[int] = None,
                 amp: bool = False) -> Config:
    """The config of one run of the study.

    Args:
        config: A PMSN or PSwAV toy config (its head owns the prior).
        prior: One of :data:`PRIORS`.
        kl_direction: One of :data:`KL_DIRECTIONS` (``reverse``: PMSN only).
        seed: The run's seed.
        work_dir: The study's folder; the run's is :func:`run_dir`.
        cfg_options: Config overrides (mmengine's ``merge_from_dict``).
        data_options: Options for every toy dataset
            (:func:`set_dataset_options`).
        max_iters: Rescale the schedule to this length
            (:func:`scale_schedule`).
        max_batch_size: Cap the training batch size.
        amp: Train with ``DeviceAwareAmpOptimWrapper`` and
            ``dtype='bfloat16'`` (:func:`pmsn_mm.engine.optimizers.set_amp`).
    """
    if prior not in PRIORS:
        raise ValueError(f'prior must be one of {sorted(PRIORS)}, got '
                         f'{prior!r}.')
    if kl_direction not in KL_DIRECTIONS:
        raise ValueError(f'kl_direction must be one of {KL_DIRECTIONS}, got '
                         f'{kl_direction!r}.')
    cfg = copy.deepcopy(config) if isinstance(config, Config) else \
        Config.fromfile(config)
    name = osp.splitext(osp.basename(cfg.filename or 'config'))[0]
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    if data_options:
        set_dataset_options(cfg, data_options)
    if max_iters is not None:
        scale_schedule(cfg, max_iters)
    if max_batch_size is not None:
        loader = cfg.train_dataloader
        loader.batch_size = min(loader.batch_size, max_batch_size)
    if amp:
        set_amp(cfg, 'bfloat16', option='amp')
    head = cfg.model.head  # PMSNHead or PSwAVHead: both own the prior
    own = head.get('prior', {}).get('type')
    if prior == 'uniform' or (prior == 'adaptive'
                              and own != 'AdaptivePowerLawPrior'):
        head.prior = copy.deepcopy(PRIORS[prior])
    elif prior == 'power-law' and own != 'PowerLawPrior':
        raise ValueError(
            f"prior 'power-law' uses the config's prior, but {name} has "
            f'{head.get("prior")}; pass a PowerLawPrior config.')
    if kl_direction != 'forward':
        if head.loss.type != 'PMSNLoss':
            raise ValueError(f"kl_direction '{kl_direction}' needs a PMSN "
                             f'config, but the loss is {head.loss.type}.')
        head.loss.kl_direction = kl_direction
    cfg.randomness = dict(seed=seed, deterministic=False)
    cfg.work_dir = run_dir(work_dir, prior, kl_direction, seed)
    # mmengine names a run's logger and visualizer "<name>_<timestamp>"
    cfg.experiment_name = f'{name}_{run_name(prior, kl_direction)}_seed{seed}'
    return cfg


def evaluate_run(model, memory: Tuple, queries: Tuple, k: int):
    """Final numbers of one run: weighted kNN top-1 of the toy labels on
    backbone (CLS) and projector features, usage / NMI / KL of the argmax
    prototypes against the prior
    (:func:`~pmsn_mm.evaluation.functional.prior_diagnostics.assignment_stats`)
    and the collapse indicator.

    Args:
        model: A PMSN or PSwAV model (``head.prior``).
        memory: ``(inputs, {label: values})`` of the kNN memory
            (:func:`~pmsn_mm.engine.hooks.prototype_assignment_hook.labelled_inputs`).
        queries: The same for the kNN queries.
        k: kNN neighbours.

    Returns:
        ``(metrics, memory backbone features, query backbone features)``.
    """
    import torch

    from pmsn_mm.engine.hooks.prototype_assignment_hook import embed_inputs
    from pmsn_mm.evaluation.functional import knn_top1
    from pmsn_mm.evaluation.functional.prior_diagnostics import (
        assignment_stats, collapse_indicator)
    was_training = model.training
    model.eval()
    mem, qry = embed_inputs(model, memory[0]), embed_inputs(model, queries[0])
    model.train(was_training)
    out: Dict[str, object] = {f'knn_{label}_{stage}': knn_top1(
        mem[stage], torch.as_tensor(memory[1][label]), qry[stage],
        torch.as_tensor(queries[1][label]), k)
        for stage in ('backbone', 'neck') for label in LABELS}
    prior = model.head.prior
    out.update(assignment_stats(mem['probs'], prior.probs, memory[1]))
    out['collapse_indicator'] = collapse_indicator(mem['neck'])
    if getattr(prior, 'tau', None) is not None:
        out['prior_tau'] = float(prior.tau)
    return out, mem['backbone'], qry['backbone']


def mean_std(values: Union[Sequence[float], np.ndarray]) -> str:
    """``'mean ± sample std'`` (3 and 2 significant digits)."""
    values = np.asarray(values, dtype=np.float64)
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    return f'{values.mean():.3g} ± {std:.2g}'


def summarise(results: Dict[str, List[dict]]) -> str:
    """A Markdown table: one row per run name, mean ± std over its seeds
    of every :data:`COLUMNS` metric (``–`` where a run lacks it)."""
    lines = ['| run | seeds | ' + ' | '.join(c[1] for c in COLUMNS) + ' |',
             '|' + ' --- |' * (len(COLUMNS) + 2)]
    for name, runs in results.items():
        cells = [mean_std([r[key] for r in runs])
                 if all(key in r for r in runs) else '–'
                 for key, _ in COLUMNS]
        lines.append(f'| {name} | {len(runs)} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def estimate_seconds(step_seconds: float, iters: int, runs: int,
                     per_device: int) -> float:
    """Training time of ``runs`` runs of ``iters`` steps, ``per_device`` at
    a time (waves of ``per_device``), each as fast as one alone."""
    return step_seconds * iters * math.ceil(runs / per_device)
