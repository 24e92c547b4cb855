"""Hooks."""
from .knn_eval_hook import KNNEvalHook
from .linear_schedule_hook import LinearScheduleHook
from .non_finite_guard_hook import NonFiniteGuardHook, NonFiniteTrainingError
from .prototype_usage_hook import PrototypeUsageHook
from .rng_state_hook import RNGStateHook
from .sharpen_temperature_hook import SharpenTemperatureHook
from .target_momentum_hook import TargetMomentumHook

__all__ = [
    'KNNEvalHook', 'LinearScheduleHook', 'SharpenTemperatureHook',
    'TargetMomentumHook'
]
__all__ += [
    'NonFiniteGuardHook', 'NonFiniteTrainingError', 'PrototypeUsageHook',
    'RNGStateHook'
]
