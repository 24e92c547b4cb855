"""Numbers a config can state in two places: one owner, or a refusal.

mmengine builds ``batch_sampler`` with the dataloader's ``batch_size`` as a
*default*, so a ``batch_size`` inside ``batch_sampler`` silently wins (and
``--auto-scale-lr`` scales for the other). :func:`check_config_values`
refuses such a config before anything is built.
"""
from typing import Any, Mapping

from .errors import ConfigValueError

#: Dataloaders whose ``batch_size`` owns the batch size.
DATALOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


def check_config_values(cfg: Any) -> None:
    """Refuse a config that states one number twice, differently.

    Args:
        cfg: A loaded ``mmengine.config.Config`` (or a mapping).

    Raises:
        ValueError: Naming both settings and their values; or a default
            hook set to None that mmengine cannot drop.
    """
    check_default_hooks(cfg)
    check_auto_scale_lr(cfg)
    for name in DATALOADERS:
        loader = cfg.get(name)
        if not isinstance(loader, Mapping):
            continue
        sampler = loader.get('batch_sampler')
        if not isinstance(sampler, Mapping) or 'batch_size' not in sampler:
            continue
        own, outer = sampler['batch_size'], loader.get('batch_size')
        if own != outer:
            raise ConfigValueError(
                f'{name}.batch_sampler.batch_size={own!r} differs from '
                f'{name}.batch_size={outer!r}: the dataloader\'s batch_size '
                'is the batch size (mmengine hands it to the batch sampler); '
                f'remove batch_size from {name}.batch_sampler and set '
                f'{name}.batch_size.')


#: mmengine's own default hooks: the only ones ``None`` may drop.
MMENGINE_DEFAULT_HOOKS = ('runtime_info', 'timer', 'logger', 'param_scheduler',
                          'checkpoint', 'sampler_seed')


def check_default_hooks(cfg: Any) -> None:
    """Refuse ``default_hooks.NAME=None`` for a hook mmengine does not
    register itself (mmengine fails on it with a bare ``AssertionError``
    once the runner is built).

    Args:
        cfg: A loaded config.

    Raises:
        ValueError: Naming the hook and what to write instead.
    """
    hooks = cfg.get('default_hooks')
    if not isinstance(hooks, Mapping):
        return
    for name, hook in hooks.items():
        if hook is None and name not in MMENGINE_DEFAULT_HOOKS:
            off = {'cpu_threads': 'default_hooks.cpu_threads.threads=None',
                   'preemption': 'default_hooks.preemption.signals=[]',
                   'non_finite_guard':
                   "default_hooks.non_finite_guard.action='skip'"}.get(name)
            raise ConfigValueError(
                f'default_hooks.{name}=None: mmengine accepts None only for '
                f'its own default hooks ({", ".join(MMENGINE_DEFAULT_HOOKS)})'
                '; remove the hook from the config\'s default_hooks'
                + (f', or switch it off with {off}' if off else '') + '.')


def check_auto_scale_lr(cfg: Any) -> None:
    """Refuse ``auto_scale_lr.enable=True`` (``--auto-scale-lr``) without the
    total batch size the lr was chosen for.

    Args:
        cfg: A loaded config.

    Raises:
        ConfigValueError: Naming the setting and how to fix it.
    """
    scale = cfg.get('auto_scale_lr')
    if not isinstance(scale, Mapping) or not scale.get('enable'):
        return
    base = scale.get('base_batch_size')
    if isinstance(base, int) and not isinstance(base, bool) and base >= 1:
        return
    config = getattr(cfg, 'filename', None) or 'the config'
    raise ConfigValueError(
        f'--auto-scale-lr: {config} sets no auto_scale_lr.base_batch_size '
        f'(got auto_scale_lr={dict(scale)!r}), the total batch size its lr '
        'was chosen for. Add auto_scale_lr = dict(base_batch_size=N) to the '
        'config, or drop --auto-scale-lr.')
