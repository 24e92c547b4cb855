"""Optimizer wrappers and optimizer-wrapper constructors."""
from .coalesced_constructor import CoalescedOptimWrapperConstructor
from .device_aware_amp_optimizer_wrapper import (AMP_CONVERTIBLE, AMP_DTYPES,
                                                 DeviceAwareAmpOptimWrapper,
                                                 amp_device_available,
                                                 amp_dtype, check_amp_device,
                                                 cuda_bf16_native, set_amp)
from .lars import SyncFreeLARS
from .param_groups import (adam_implementation, coalesce_param_groups,
                           resume_check)
from .skip_frozen_constructor import SkipFrozenOptimWrapperConstructor

__all__ = [
    'AMP_CONVERTIBLE', 'AMP_DTYPES', 'CoalescedOptimWrapperConstructor',
    'DeviceAwareAmpOptimWrapper', 'SkipFrozenOptimWrapperConstructor',
    'SyncFreeLARS', 'adam_implementation', 'amp_device_available',
    'amp_dtype', 'check_amp_device', 'coalesce_param_groups',
    'cuda_bf16_native', 'resume_check', 'set_amp'
]
