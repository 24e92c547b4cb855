"""Dataloader settings fitted to the machine a config runs on: the
paper-scale configs ask for a GPU node's workers and pinned memory, which
on a laptop only make torch warn (:func:`fit_loaders_to_machine`).
"""
from typing import Any, List, Mapping, MutableMapping, Optional, Tuple, cast

from .cpu_load import available_cores

#: The dataloaders of a config.
LOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


def accelerator_available() -> bool:
    """Whether torch finds a device that pinned memory serves (CUDA or
    another accelerator torch knows)."""
    import torch
    if torch.cuda.is_available():
        return True
    acc = getattr(torch, 'accelerator', None)
    try:
        return bool(acc is not None and acc.is_available())
    except Exception:  # noqa: BLE001  an accelerator API without devices
        return False


def _loaders(cfg: Any) -> List[Tuple[str, MutableMapping]]:
    """The config's dataloader dicts (``val_dataloader`` of a kNN loop may
    hold a memory and a query loader)."""
    found: List[Tuple[str, MutableMapping]] = []
    for name in LOADERS:
        loader = cfg.get(name)
        if isinstance(loader, Mapping):
            # the config's dicts: changed in place by the caller
            found.append((name, cast(MutableMapping, loader)))
    return found


def fit_loaders_to_machine(cfg: Any, cores: Optional[int] = None,
                           accelerator: Optional[bool] = None
                           ) -> Optional[str]:
    """Cap every dataloader's ``num_workers`` at the available cores and
    drop ``pin_memory`` without an accelerator, in place.

    Args:
        cfg: The merged config.
        cores: Cores to allow (None: the process's CPU affinity).
        accelerator: Whether an accelerator serves pinned memory (None: torch).

    Returns:
        One line naming every change, or None if nothing changed.
    """
    cores = available_cores() if cores is None else cores
    accelerator = (accelerator_available()
                   if accelerator is None else accelerator)
    changes = []
    for name, loader in _loaders(cfg):
        workers = loader.get('num_workers', 0)
        if isinstance(workers, int) and workers > cores:
            loader['num_workers'] = cores
            changes.append(f'{name}.num_workers {workers} -> {cores}')
        if loader.get('persistent_workers') and not loader.get(
                'num_workers', 0):
            # torch refuses persistent workers without workers (mmpretrain's
            # tools set persistent_workers=True on every loader)
            loader['persistent_workers'] = False
            changes.append(f'{name}.persistent_workers True -> False')
        if loader.get('pin_memory') and not accelerator:
            loader['pin_memory'] = False
            changes.append(f'{name}.pin_memory True -> False')
    if not changes:
        return None
    reasons = []
    if any('num_workers' in c for c in changes):
        reasons.append(f'{cores} CPU cores')
    if any('pin_memory' in c for c in changes):
        reasons.append('no accelerator to pin memory for')
    if any('persistent_workers' in c for c in changes):
        reasons.append('no worker to keep')
    return (f'Dataloaders fitted to this machine ({"; ".join(reasons)}): '
            f'{", ".join(changes)}.')
