"""Utilities: safe checkpoint loading and writing, RNG states, work dirs,
config-key and config-type checks and launcher set-up."""
from .atomic_file_backend import (AtomicLocalBackend, atomic_write_bytes,
                                  register_atomic_backend)
from .checkpoint import (allow_checkpoint_globals, checkpoint_safe_globals,
                         restricted_getattr)
from .config_keys import (apply_strict_config_keys, strict_config_keys,
                          valid_config_keys)
from .config_types import UnknownConfigTypeError, check_config_types
from .config_values import check_config_values
from .launcher import (end_distributed, exit_after_distributed_run,
                       setup_cpu_distributed)
from .rng_state import (get_rng_state, rng_state_from_checkpoint,
                        rng_state_to_checkpoint, set_rng_state)
from .work_dir import (WorkDirPlan, discard_moved, existing_checkpoints,
                       find_resume_checkpoint, is_complete_checkpoint,
                       move_aside, newest_checkpoint, prepare_work_dir,
                       restore_moved)

__all__ = [
    'AtomicLocalBackend', 'WorkDirPlan', 'allow_checkpoint_globals',
    'apply_strict_config_keys', 'atomic_write_bytes',
    'checkpoint_safe_globals', 'discard_moved', 'end_distributed',
    'existing_checkpoints', 'is_complete_checkpoint', 'move_aside',
    'exit_after_distributed_run',
    'find_resume_checkpoint', 'get_rng_state', 'newest_checkpoint',
    'prepare_work_dir', 'register_atomic_backend', 'restore_moved',
    'restricted_getattr', 'rng_state_from_checkpoint',
    'rng_state_to_checkpoint', 'set_rng_state', 'setup_cpu_distributed',
    'strict_config_keys', 'valid_config_keys', 'UnknownConfigTypeError',
    'check_config_types', 'check_config_values'
]
