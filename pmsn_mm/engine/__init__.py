"""Training-time engine parts: hooks, loops, model wrappers and
optimizer-wrapper constructors, with what serves them: safe checkpoint
loading (:mod:`~pmsn_mm.engine.checkpoint`) and atomic writes
(:mod:`~pmsn_mm.engine.atomic_file_backend`), resume or overwrite
(:mod:`~pmsn_mm.engine.resume`, ``WorkDirOverwriteHook``), RNG states
(:mod:`~pmsn_mm.engine.rng_state`, ``RNGStateHook``) and the launcher
set-up (:mod:`~pmsn_mm.engine.launcher`). The step's profilers and op
counters are test code (``tests/_profiling/``)."""
from . import hooks, model_wrappers, optimizers, runners  # noqa: F401
from .checkpoint import allow_checkpoint_globals
from .launcher import (end_distributed, exit_after_distributed_run,
                       setup_cpu_distributed)

__all__ = [
    'allow_checkpoint_globals', 'end_distributed',
    'exit_after_distributed_run', 'setup_cpu_distributed'
]
