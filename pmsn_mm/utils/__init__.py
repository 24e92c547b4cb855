"""Utilities: safe checkpoint loading, RNG states and launcher set-up."""
from .checkpoint import (allow_checkpoint_globals, checkpoint_safe_globals,
                         restricted_getattr)
from .launcher import setup_cpu_distributed
from .rng_state import (get_rng_state, rng_state_from_checkpoint,
                        rng_state_to_checkpoint, set_rng_state)

__all__ = [
    'allow_checkpoint_globals', 'checkpoint_safe_globals', 'get_rng_state',
    'restricted_getattr', 'rng_state_from_checkpoint',
    'rng_state_to_checkpoint', 'set_rng_state', 'setup_cpu_distributed'
]
