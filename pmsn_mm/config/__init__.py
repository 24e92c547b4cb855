"""Checks of configs before they run (:func:`check_config`): unknown
``type`` names, unknown config keys (read from the registered classes'
signatures), value ranges and numbers stated twice."""
from .config_keys import (UnknownConfigKeyError, check_config,
                          check_config_keys, valid_config_keys)
from .config_types import UnknownConfigTypeError, check_config_types
from .config_values import check_config_values
from .errors import (ConfigCheckError, ConfigNotFoundError, ConfigValueError,
                     UnknownOptionError)

__all__ = [
    'ConfigCheckError', 'ConfigNotFoundError', 'ConfigValueError',
    'UnknownConfigKeyError', 'UnknownConfigTypeError', 'UnknownOptionError',
    'check_config',
    'check_config_keys', 'check_config_types', 'check_config_values',
    'valid_config_keys'
]
