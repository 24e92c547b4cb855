"""Hooks."""
from .cpu_threads_hook import CPUThreadsHook
from .final_val_metrics_hook import FinalValMetricsHook
from .non_finite_guard_hook import NonFiniteGuardHook, NonFiniteTrainingError
from .preemption_hook import PreemptionHook
from .prior_weight_warmup_hook import PriorWeightWarmupHook
from .prototype_assignment_hook import PrototypeAssignmentHook
from .prototype_usage_hook import PrototypeUsageHook
from .rng_state_hook import RNGStateHook
from .target_ema_hook import TargetEMAHook
from .work_dir_overwrite_hook import WorkDirOverwriteHook

__all__ = [
    'CPUThreadsHook', 'FinalValMetricsHook', 'NonFiniteGuardHook',
    'NonFiniteTrainingError', 'PreemptionHook', 'PriorWeightWarmupHook',
    'PrototypeAssignmentHook', 'PrototypeUsageHook', 'RNGStateHook',
    'TargetEMAHook', 'WorkDirOverwriteHook'
]
