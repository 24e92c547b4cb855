"""Checks of configs before they run: unknown config keys (every registered
pmsn_mm class's ``__init__`` is wrapped at import, see
:mod:`pmsn_mm.config.config_keys`), unknown ``type`` names and value
ranges."""
from .config_keys import (apply_strict_config_keys, strict_config_keys,
                          valid_config_keys)
from .config_types import UnknownConfigTypeError, check_config_types
from .config_values import check_config_values

__all__ = [
    'UnknownConfigTypeError', 'apply_strict_config_keys',
    'check_config_types', 'check_config_values', 'strict_config_keys',
    'valid_config_keys'
]
