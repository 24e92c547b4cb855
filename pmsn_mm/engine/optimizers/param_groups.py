"""Param groups with one entry per distinct setting, and the AdamW kernel
(fused on CUDA, foreach elsewhere)."""
from typing import Any, Callable, Dict, Iterable, List, Optional

import torch
from torch import Tensor
from torch.optim import Optimizer

#: Optimizer arguments that pick an implementation, not a hyperparameter.
IMPLEMENTATION_KEYS = ('fused', 'foreach')


def _settings(group: dict, defaults: Dict[str, Any]) -> Dict[str, Any]:
    """A group's entries except ``params``, over ``defaults``."""
    out = dict(defaults)
    out.update((k, v) for k, v in group.items() if k != 'params')
    return out


def coalesce_param_groups(groups: List[dict],
                          defaults: Optional[Dict[str, Any]] = None,
                          names: Optional[Dict[int, List[str]]] = None
                          ) -> List[dict]:
    """Merge the param groups whose settings are equal.

    A group's settings are all its entries except ``'params'``, missing
    ones taken from ``defaults``. Merged groups come in the order in which
    their settings first appear, parameters in the order of ``groups``. A
    parameter that comes twice (a shared weight without
    ``bypass_duplicate``) is refused: merged, it would be updated twice.

    Args:
        groups: Param groups, e.g. one per parameter as mmengine's
            ``DefaultOptimWrapperConstructor.add_params`` makes them.
        defaults: Values of entries a group may leave out (``lr``,
            ``weight_decay`` of the optimizer config). Defaults to None.
        names: ``id(parameter)`` -> its names, for the error. Defaults to None.

    Returns:
        New groups (the input is not changed), each with every setting of
        its members written out and a new ``params`` list.

    Raises:
        ValueError: A parameter is in several groups (or twice in one).
    """
    defaults = defaults or {}
    seen: set = set()
    for group in groups:
        for param in group['params']:
            if id(param) in seen:
                raise ValueError(_duplicate_message(param, names or {}))
            seen.add(id(param))
    merged: List[dict] = []
    for group in groups:
        settings = _settings(group, defaults)
        for target in merged:
            if _settings(target, {}) == settings:
                target['params'].extend(group['params'])
                break
        else:
            merged.append(dict(settings, params=list(group['params'])))
    return merged


def _duplicate_message(param: Tensor, names: Dict[int, List[str]]) -> str:
    known = names.get(id(param), [])
    what = (f'parameter {known[0]!r}' + (
        f' (shared with {", ".join(repr(n) for n in known[1:])})'
        if len(known) > 1 else '')) if known else (
            f'a parameter of shape {tuple(param.shape)}')
    return (f'The {what} appears in more than one parameter group: it is '
            'shared (tied) between modules, and mmengine\'s add_params lists '
            'it once per module (torch refuses such groups; merged into one '
            'group it would be updated twice per step). Set '
            'optim_wrapper.paramwise_cfg.bypass_duplicate=True to optimise it '
            'once, with the settings of its first module.')


def adam_implementation(optimizer_cls: type, optimizer_cfg: dict,
                        params: Iterable[Tensor]) -> Dict[str, bool]:
    """The kernel for ``torch.optim.Adam``/``AdamW``: ``{'fused': True}``
    where CUDA is available and every parameter is a floating-point CUDA
    tensor (fused AdamW's requirement), else ``{'foreach': True}``.

    Other optimizers, and configs that set ``fused`` or ``foreach``,
    get ``{}``.

    Args:
        optimizer_cls: The optimizer class.
        optimizer_cfg: The optimizer config (its ``fused``/``foreach``).
        params: The parameters to optimize.

    Returns:
        Keyword arguments for the optimizer.
    """
    if not (isinstance(optimizer_cls, type)
            and issubclass(optimizer_cls, torch.optim.Adam)):
        return {}
    if any(optimizer_cfg.get(k) is not None for k in IMPLEMENTATION_KEYS):
        return {}
    params = list(params)
    if params and torch.cuda.is_available() and all(
            p.device.type == 'cuda' and p.is_floating_point()
            for p in params):
        return {'fused': True}
    return {'foreach': True}


def resume_check(coalesced_from: Optional[int]
                 ) -> Callable[[Optimizer, dict], dict]:
    """An optimizer ``load_state_dict`` pre-hook for coalesced groups.

    With coalesced groups it refuses, naming the way out, a state with
    another number of param groups (torch would refuse it without saying
    why); it keeps this run's ``fused`` / ``foreach`` either way.

    Args:
        coalesced_from: Groups before coalescing (None: keep the kernel only).

    Returns:
        The hook, for ``Optimizer.register_load_state_dict_pre_hook``.
    """

    def hook(optimizer: Optimizer, state_dict: dict) -> dict:
        saved = state_dict['param_groups']
        groups = optimizer.param_groups
        if coalesced_from is not None and len(saved) != len(groups):
            raise ValueError(
                f'The checkpoint\'s optimizer state has {len(saved)} param '
                f'groups, this optimizer has {len(groups)} (coalesced from '
                f'{coalesced_from}, one per parameter with a paramwise '
                'setting). A checkpoint saved before pmsn_mm coalesced '
                'equal param groups holds one group per parameter, and its '
                'parameter scheduler states one value per group: resume it '
                'with '
                'optim_wrapper.coalesce_param_groups=False (e.g. '
                '--cfg-options optim_wrapper.coalesce_param_groups=False), '
                'or start from its weights with load_from and resume=False.')
        if len(saved) != len(groups):
            return state_dict  # torch refuses it
        state_dict = dict(state_dict)
        state_dict['param_groups'] = [
            dict(s, **{k: g[k]
                       for k in IMPLEMENTATION_KEYS if k in g})
            for s, g in zip(saved, groups)
        ]
        return state_dict

    return hook
