"""Dataloader settings fitted to the machine a config runs on.

The paper-scale configs ask for the workers and pinned memory of a GPU
node (``num_workers=10``, ``pin_memory=True``); on a laptop they are noise
or worse: torch warns that more workers than cores may freeze the loader,
and that ``pin_memory`` has nothing to pin without an accelerator.
:func:`fit_loaders_to_machine` caps each loader's workers at the cores the
process may use and drops ``pin_memory`` where no accelerator is found,
and returns one line saying what it changed (nothing where the config
already fits).
"""
from typing import Any, List, Mapping, Optional

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


def _loaders(cfg: Any) -> List[Mapping]:
    """The config's dataloader dicts (``val_dataloader`` of a kNN loop may
    hold a memory and a query loader)."""
    found = []
    for name in LOADERS:
        loader = cfg.get(name)
        if isinstance(loader, Mapping):
            found.append((name, loader))
    return found


def fit_loaders_to_machine(cfg: Any, cores: Optional[int] = None,
                           accelerator: Optional[bool] = None
                           ) -> Optional[str]:
    """Cap every dataloader's ``num_workers`` at the available cores and
    drop ``pin_memory`` without an accelerator, in place.

    Args:
        cfg: The merged config.
        cores: Cores to allow (None: the process's CPU affinity).
        accelerator: Whether an accelerator serves pinned memory (None:
            ask torch).

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
    return (f'Dataloaders fitted to this machine ({"; ".join(reasons)}): '
            f'{", ".join(changes)}.')
