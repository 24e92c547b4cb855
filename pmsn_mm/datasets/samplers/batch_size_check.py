"""Keep a sampler's ``batch_size`` equal to its dataloader's.

mmengine builds a ``sampler`` with ``dataset`` and ``seed`` only; the
dataloader's ``batch_size`` goes to the batch sampler. A sampler that lays
out whole batches itself (``ClassStratifiedSampler``: K classes per batch)
therefore takes ``batch_size`` as its own argument, and if it differs from
the dataloader's, the dataloader cuts the index stream at other places and
every batch mixes classes of two sampler batches, silently.
"""
import inspect
from typing import Any, Optional

from mmengine.config import Config
from mmpretrain.registry import DATA_SAMPLERS

DATALOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


def _sampler_class(sampler_type: Any) -> Optional[type]:
    if isinstance(sampler_type, type):
        return sampler_type
    if isinstance(sampler_type, str):
        return DATA_SAMPLERS.get(sampler_type)
    return None


def takes_batch_size(sampler_type: Any) -> bool:
    """Whether a sampler type's constructor has a ``batch_size`` argument.

    Args:
        sampler_type: A registered name or a class.
    """
    cls = _sampler_class(sampler_type)
    if cls is None:
        return False
    return 'batch_size' in inspect.signature(cls.__init__).parameters


def sync_sampler_batch_size(cfg: Config) -> None:
    """Give batch-laying samplers the dataloader's ``batch_size``.

    For each of ``train/val/test_dataloader`` whose sampler takes a
    ``batch_size`` (e.g. ``ClassStratifiedSampler``): if the sampler config
    has none, the dataloader's is filled in; if it has a different one, a
    clear error is raised at start-up.

    Args:
        cfg: The merged config; updated in place.

    Raises:
        ValueError: If a sampler's ``batch_size`` differs from its
            dataloader's, naming both values.
    """
    for name in DATALOADERS:
        loader = cfg.get(name)
        if not isinstance(loader, dict) or loader.get('batch_size') is None:
            continue
        sampler = loader.get('sampler')
        if not isinstance(sampler, dict) or not takes_batch_size(
                sampler.get('type')):
            continue
        batch_size = loader['batch_size']
        if sampler.get('batch_size') is None:
            sampler['batch_size'] = batch_size
        elif sampler['batch_size'] != batch_size:
            raise ValueError(
                f'{name}.sampler.batch_size={sampler["batch_size"]} '
                f'({sampler["type"]}) differs from '
                f'{name}.batch_size={batch_size}: the sampler lays out '
                'batches of its own size and the dataloader would cut them '
                'at other places, mixing batches. Use the same value for '
                f'both (or leave out {name}.sampler.batch_size; '
                "tools/train.py then takes the dataloader's).")
