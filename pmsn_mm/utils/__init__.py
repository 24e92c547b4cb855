"""Utilities: safe checkpoint loading and writing, RNG states, work dirs,
config-key checks and launcher set-up."""
from .atomic_file_backend import (AtomicLocalBackend, atomic_write_bytes,
                                  register_atomic_backend)
from .checkpoint import (allow_checkpoint_globals, checkpoint_safe_globals,
                         restricted_getattr)
from .config_keys import (apply_strict_config_keys, strict_config_keys,
                          valid_config_keys)
from .launcher import (end_distributed, exit_after_distributed_run,
                       setup_cpu_distributed)
from .rng_state import (get_rng_state, rng_state_from_checkpoint,
                        rng_state_to_checkpoint, set_rng_state)
from .work_dir import (existing_checkpoints, find_resume_checkpoint,
                       newest_checkpoint, prepare_work_dir, remove_checkpoints)

__all__ = [
    'AtomicLocalBackend', 'allow_checkpoint_globals',
    'apply_strict_config_keys', 'atomic_write_bytes',
    'checkpoint_safe_globals', 'end_distributed', 'existing_checkpoints',
    'exit_after_distributed_run',
    'find_resume_checkpoint', 'get_rng_state', 'newest_checkpoint',
    'prepare_work_dir', 'register_atomic_backend', 'remove_checkpoints',
    'restricted_getattr', 'rng_state_from_checkpoint',
    'rng_state_to_checkpoint', 'set_rng_state', 'setup_cpu_distributed',
    'strict_config_keys', 'valid_config_keys'
]
