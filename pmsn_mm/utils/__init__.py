"""Utilities: safe checkpoint loading and launcher set-up."""
from .checkpoint import (allow_checkpoint_globals, checkpoint_safe_globals,
                         restricted_getattr)
from .launcher import setup_cpu_distributed

__all__ = [
    'allow_checkpoint_globals', 'checkpoint_safe_globals',
    'restricted_getattr', 'setup_cpu_distributed'
]
