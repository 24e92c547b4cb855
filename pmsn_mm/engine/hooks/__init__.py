"""Hooks."""
from .non_finite_guard_hook import NonFiniteGuardHook, NonFiniteTrainingError
from .prototype_usage_hook import PrototypeUsageHook
from .rng_state_hook import RNGStateHook
from .target_ema_hook import TargetEMAHook

__all__ = [
    'NonFiniteGuardHook', 'NonFiniteTrainingError',
    'PrototypeUsageHook', 'RNGStateHook', 'TargetEMAHook'
]
