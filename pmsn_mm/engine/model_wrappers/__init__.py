from .device_aware_ddp import DeviceAwareDistributedDataParallel

__all__ = ['DeviceAwareDistributedDataParallel']
