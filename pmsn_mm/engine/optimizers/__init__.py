"""Optimizer wrappers and optimizer-wrapper constructors."""
from .coalesced_constructor import CoalescedOptimWrapperConstructor
from .device_aware_amp_optimizer_wrapper import (DeviceAwareAmpOptimWrapper,
                                                 amp_device_available,
                                                 cuda_bf16_native)
from .lars import SyncFreeLARS
from .param_groups import (adam_implementation, coalesce_param_groups,
                           resume_check)
from .skip_frozen_constructor import SkipFrozenOptimWrapperConstructor

__all__ = [
    'CoalescedOptimWrapperConstructor', 'DeviceAwareAmpOptimWrapper',
    'SkipFrozenOptimWrapperConstructor', 'SyncFreeLARS',
    'adam_implementation', 'amp_device_available', 'coalesce_param_groups',
    'cuda_bf16_native', 'resume_check'
]
