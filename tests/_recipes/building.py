"""A config's parts built as mmengine's Runner builds them, for the recipe
checkers: the optimizer wrapper without AMP (and the precision the AMP wrapper
sets), the parameter schedulers stepped through a run, and a quiet logger
while they are built.
"""
import contextlib
import copy
import logging
import warnings
from typing import Any, Iterator, List, Tuple

import torch
from mmengine.config import Config, ConfigDict
from mmengine.logging import MMLogger
from mmengine.optim import AmpOptimWrapper
from mmengine.registry import OPTIM_WRAPPERS, PARAM_SCHEDULERS

import pmsn_mm.engine  # noqa: F401  (registers DeviceAwareAmpOptimWrapper)


def _is_amp(wrapper: ConfigDict) -> bool:
    kind = wrapper.get('type', 'OptimWrapper')
    cls = OPTIM_WRAPPERS.get(kind) if isinstance(kind, str) else kind
    return isinstance(cls, type) and issubclass(cls, AmpOptimWrapper)


def training_precision(cfg: Config) -> str:
    """The precision a config trains in: ``'fp32'``, or the autocast dtype
    of its AMP wrapper (``'bf16'`` / ``'fp16'``; mmengine's
    ``AmpOptimWrapper`` without ``dtype`` autocasts to float16).

    Args:
        cfg: A config with ``optim_wrapper``.
    """
    wrapper = cfg.optim_wrapper
    if not _is_amp(wrapper):
        return 'fp32'
    dtype = wrapper.get('dtype') or 'float16'
    name = str(dtype).replace('torch.', '')
    names = {'float16': 'fp16', 'bfloat16': 'bf16'}
    if name not in names:
        raise ValueError(f'optim_wrapper.dtype {dtype!r} is not one of '
                         f'{", ".join(names)}.')
    return names[name]


def plain_optim_wrapper_cfg(cfg: Config) -> ConfigDict:
    """``cfg.optim_wrapper`` with an AMP wrapper replaced by the plain one.

    mmengine's AMP wrapper refuses to build without CUDA; the plain wrapper
    holds the same optimizer (the precision is read by
    :func:`training_precision`).

    Args:
        cfg: A config with ``optim_wrapper``.
    """
    wrapper = copy.deepcopy(cfg.optim_wrapper)
    if _is_amp(wrapper):
        wrapper.type = 'OptimWrapper'
        wrapper.pop('loss_scale', None)
        wrapper.pop('dtype', None)
    return wrapper


@contextlib.contextmanager
def quiet_current_logger(level: int = logging.WARNING) -> Iterator[None]:
    """Raise the current mmengine logger's level for a block (building an
    optimizer logs one line per parameter with a paramwise setting).

    Args:
        level: The level inside the block.
    """
    logger = MMLogger.get_current_instance()
    old = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(old)


def scheduler_curves(schedulers: Any, group: dict, steps: int,
                     epoch_length: int = 1
                     ) -> Tuple[List[float], List[float], list]:
    """The lr and weight decay of one parameter group at every step of the
    configured parameter schedulers (built with the registry, stepped as
    mmengine's ``ParamSchedulerHook`` does).

    Schedulers act on each group alone, so they are stepped on a copy of
    ``group`` (stepping hundreds of per-parameter groups through a whole
    run costs seconds per config).

    Args:
        schedulers: ``cfg.param_scheduler`` (a dict, a list or None).
        group: A parameter group of the built optimizer.
        steps: How many values to record (one per step).
        epoch_length: Iterations per epoch, for ``convert_to_iter_based``.

    Returns:
        ``(lrs, weight_decays, schedulers)``: the values at each of the
        ``steps`` steps and the built schedulers.
    """
    if isinstance(schedulers, dict):
        schedulers = [schedulers]
    single = torch.optim.SGD([torch.zeros(1, requires_grad=True)],
                             lr=group['lr'],
                             weight_decay=group['weight_decay'])
    built = [
        PARAM_SCHEDULERS.build(
            copy.deepcopy(s),
            default_args=dict(optimizer=single, epoch_length=epoch_length))
        for s in schedulers or []
    ]
    copy_group = single.param_groups[0]
    lrs, wds = [], []
    with warnings.catch_warnings():  # stepped without optimizer steps
        warnings.simplefilter('ignore', UserWarning)
        for _ in range(steps):
            lrs.append(copy_group['lr'])
            wds.append(copy_group['weight_decay'])
            for scheduler in built:
                scheduler.step()
    return lrs, wds, built
