"""Optimizer wrappers and optimizer-wrapper constructors."""
from .device_aware_amp_optimizer_wrapper import (DeviceAwareAmpOptimWrapper,
                                                 amp_device_available)
from .lars import LARS
from .skip_frozen_constructor import SkipFrozenOptimWrapperConstructor

__all__ = [
    'DeviceAwareAmpOptimWrapper', 'LARS', 'SkipFrozenOptimWrapperConstructor',
    'amp_device_available'
]
