"""DDP wrapper that also works for CPU-only (gloo) training."""
import warnings
from typing import Any, Optional, Sequence, cast

import torch.nn as nn
from mmengine.logging import print_log
from mmengine.model import MMDistributedDataParallel, revert_sync_batchnorm
# mmengine's runner resolves wrappers with the root registry's ``get`` (no
# default scope), so this one is registered there rather than in mmpretrain's.
from mmengine.registry import MODEL_WRAPPERS


@MODEL_WRAPPERS.register_module()
class DeviceAwareDistributedDataParallel(MMDistributedDataParallel):
    """:class:`MMDistributedDataParallel` that drops ``device_ids`` on CPU.

    mmengine passes ``device_ids=[LOCAL_RANK]``, which torch rejects for a
    CPU module. A module with no trainable parameter (a frozen benchmark
    encoder), which DDP refuses, is kept unwrapped for ``val_step`` /
    ``test_step``. torch's ``broadcast_buffers`` deprecation note is hidden.

    Args:
        module: The model to wrap.
        device_ids: CUDA devices of this process; ignored for CPU modules.
        detect_anomalous_params: See :class:`MMDistributedDataParallel`.
        **kwargs: Passed to :class:`torch.nn.parallel.DistributedDataParallel`.
    """

    def __init__(self,
                 module: nn.Module,
                 device_ids: Optional[Sequence[int]] = None,
                 detect_anomalous_params: bool = False,
                 **kwargs: Any) -> None:
        first_param = next(module.parameters(), None)
        if first_param is None or first_param.device.type == 'cpu':
            device_ids = None
            module = revert_sync_batchnorm(module)
            print_log(
                'CPU distributed training: SyncBN layers (if any) run as '
                'per-process BatchNorm.',
                logger='current')
        if not any(p.requires_grad for p in module.parameters()):
            # nn.Module's init only: no DDP (reducer, state broadcast)
            # (mypy sees the mmengine base, untyped, not its DDP base)
            super(nn.parallel.DistributedDataParallel,
                  cast(nn.parallel.DistributedDataParallel, self)).__init__()
            self.module = module
            return
        with warnings.catch_warnings():
            # torch 2.14 deprecates broadcast_buffers for
            # forward_sync_buffers, whose False still syncs buffers at init;
            # torch's own advice for buffers that must stay rank-local is to
            # keep broadcast_buffers=False (mmengine's default) for now
            warnings.filterwarnings('ignore', category=FutureWarning,
                                    message='`broadcast_buffers` is '
                                    'deprecated')
            super().__init__(
                module=module,
                device_ids=device_ids,
                detect_anomalous_params=detect_anomalous_params,
                **kwargs)
