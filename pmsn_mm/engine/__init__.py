"""Training-time engine parts: hooks, loops, model wrappers and
optimizer-wrapper constructors, with what serves them (checkpoint loading
and atomic writes, resume, RNG states, the launcher set-up)."""
from . import hooks, model_wrappers, optimizers, runners  # noqa: F401
from .checkpoint import allow_checkpoint_globals
from .launcher import (end_distributed, exit_after_distributed_run,
                       setup_cpu_distributed)

__all__ = [
    'allow_checkpoint_globals', 'end_distributed',
    'exit_after_distributed_run', 'setup_cpu_distributed'
]
