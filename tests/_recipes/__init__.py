"""The recipe checker: recipe tables (``configs/recipes/``) and what checks
configs against them. Maintainer code (the tests and
``.dev_scripts/recipes_to_md.py`` use it), so it lives with the tests, not in
the package.

Public API (import it from ``tests._recipes``; each name is loaded on first
use, so reading the tables builds nothing):

- :mod:`.tables` (light): :func:`load_recipe_table`,
  :func:`expected_recipe`, :func:`same_value`, :func:`round_value`,
  :func:`name_batch`, :data:`NAME_BATCH`.
- :mod:`.pretraining`: :func:`resolve_recipe`, :func:`global_batch`,
  :func:`linear_widths`, :func:`view_rows`.
- :mod:`.evaluation` (linear probes): :func:`resolve_probe_recipe`,
  :func:`load_evaluation_table`, :func:`expected_probe_recipe`,
  :func:`name_lr_schedule`, :func:`family_of`, :func:`scopes_of`,
  :func:`split_key`, :func:`describe_pipeline`, :func:`build_probe_model`,
  :data:`ENTRY_KEYS`.
- :mod:`.building`: :func:`plain_optim_wrapper_cfg`,
  :func:`quiet_current_logger`, :func:`scheduler_curves`,
  :func:`training_precision`.
- :mod:`.paper_quotes`: the paper sentences the tables quote.

:mod:`.pretraining` and :mod:`.evaluation` import the ``pmsn_mm``
subpackages whose classes the configs name (never the package back).
"""
import importlib
from typing import Any

_MODULE_OF = {
    'NAME_BATCH': 'tables',
    'expected_recipe': 'tables',
    'load_recipe_table': 'tables',
    'name_batch': 'tables',
    'round_value': 'tables',
    'same_value': 'tables',
    'global_batch': 'pretraining',
    'linear_widths': 'pretraining',
    'resolve_recipe': 'pretraining',
    'view_rows': 'pretraining',
    'ENTRY_KEYS': 'evaluation',
    'build_probe_model': 'evaluation',
    'describe_pipeline': 'evaluation',
    'expected_probe_recipe': 'evaluation',
    'family_of': 'evaluation',
    'load_evaluation_table': 'evaluation',
    'name_lr_schedule': 'evaluation',
    'resolve_probe_recipe': 'evaluation',
    'scopes_of': 'evaluation',
    'split_key': 'evaluation',
    'plain_optim_wrapper_cfg': 'building',
    'quiet_current_logger': 'building',
    'scheduler_curves': 'building',
    'training_precision': 'building',
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(f'.{module}', __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
