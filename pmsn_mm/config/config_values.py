"""Numbers a config can state in two places: one owner, or a refusal that
names both.

mmengine builds a dataloader's ``batch_sampler`` with the dataloader's
``batch_size`` as a *default* argument, so a ``batch_size`` written inside
``batch_sampler`` wins without a word (``batch_sampler=dict(type=
'ClassStratifiedBatchSampler', batch_size=4)`` under ``batch_size=8``
trains at 4, and ``--auto-scale-lr`` scales for 8).
:func:`check_config_values` refuses such a config before anything is
built. (A head's ``num_prototypes`` and its prior's length are checked
where the head builds its prior.)
"""
from typing import Any, Mapping

#: Dataloaders whose ``batch_size`` owns the batch size.
DATALOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


def check_config_values(cfg: Any) -> None:
    """Refuse a config that states one number twice, differently.

    Args:
        cfg: A loaded ``mmengine.config.Config`` (or a mapping of its
            shape).

    Raises:
        ValueError: Naming both settings and their values, e.g.
            ``train_dataloader.batch_sampler.batch_size=4 differs from
            train_dataloader.batch_size=8``.
    """
    for name in DATALOADERS:
        loader = cfg.get(name)
        if not isinstance(loader, Mapping):
            continue
        sampler = loader.get('batch_sampler')
        if not isinstance(sampler, Mapping) or 'batch_size' not in sampler:
            continue
        own, outer = sampler['batch_size'], loader.get('batch_size')
        if own != outer:
            raise ValueError(
                f'{name}.batch_sampler.batch_size={own!r} differs from '
                f'{name}.batch_size={outer!r}: the dataloader\'s batch_size '
                'is the batch size (mmengine hands it to the batch sampler); '
                f'remove batch_size from {name}.batch_sampler and set '
                f'{name}.batch_size.')
