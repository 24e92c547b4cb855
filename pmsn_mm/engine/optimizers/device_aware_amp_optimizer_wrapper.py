"""Mixed precision that also trains on the CPU (bfloat16 autocast)."""
from contextlib import contextmanager
from typing import Iterator, Optional, Union

import torch
import torch.nn as nn
from mmengine.device import (is_cuda_available, is_mlu_available,
                             is_musa_available, is_npu_available)
from mmengine.logging import print_log
from mmengine.optim import AmpOptimWrapper, OptimWrapper
# mmengine's OptimWrapperConstructor builds wrappers from the registry of the
# default scope, whose parent is the root one: registered there (as the DDP
# wrapper of this package), the type resolves in any scope.
from mmengine.registry import OPTIM_WRAPPERS


def amp_device_available() -> bool:
    """Whether mmengine's :class:`AmpOptimWrapper` can build here (CUDA,
    NPU, MLU or MUSA)."""
    return (is_cuda_available() or is_npu_available() or is_mlu_available()
            or is_musa_available())


@OPTIM_WRAPPERS.register_module()
class DeviceAwareAmpOptimWrapper(AmpOptimWrapper):
    """mmengine's :class:`AmpOptimWrapper` that also runs on the CPU.

    With an accelerator (CUDA, NPU, MLU, MUSA) it is exactly
    :class:`AmpOptimWrapper`: autocast with ``dtype`` (float16 by default)
    and a ``GradScaler`` configured by ``loss_scale``. Without one, where
    mmengine's wrapper refuses to build (``AmpOptimizerWrapper is only
    available training on gpu``), the forward and loss run under
    ``torch.autocast('cpu', dtype=torch.bfloat16)`` and no loss scaling is
    done: bfloat16 has float32's exponent range, so gradients do not
    underflow and need no scaler (``loss_scale`` is ignored there, and the
    configured ``dtype`` too: CPU autocast is bfloat16-only in mmengine and
    float16 would need the scaler). One line is logged when the CPU path is
    taken. Gradient accumulation, clipping and the optimizer state behave
    as in :class:`OptimWrapper`; a CPU run's checkpoint has no
    ``loss_scaler`` entry (a CUDA run resumed from it starts a fresh
    scaler), and the ``loss_scaler`` of a CUDA checkpoint is ignored on the
    CPU.

    Args:
        loss_scale: ``GradScaler`` setting on an accelerator (see
            :class:`AmpOptimWrapper`). Defaults to ``'dynamic'``.
        dtype: Autocast dtype on an accelerator (``None``: float16).
            Defaults to None.
        use_fsdp: See :class:`AmpOptimWrapper`. Defaults to False.
        **kwargs: Passed to :class:`OptimWrapper` (``optimizer``,
            ``accumulative_counts``, ``clip_grad``).
    """

    def __init__(self,
                 loss_scale: Union[str, float, dict] = 'dynamic',
                 dtype: Optional[Union[str, torch.dtype]] = None,
                 use_fsdp: bool = False,
                 **kwargs) -> None:
        self.on_cpu = not amp_device_available()
        if not self.on_cpu:
            super().__init__(
                loss_scale=loss_scale, dtype=dtype, use_fsdp=use_fsdp,
                **kwargs)
            return
        OptimWrapper.__init__(self, **kwargs)
        self._scale_update_param = None
        # a disabled scaler: scale/unscale_/update do nothing, step() calls
        # optimizer.step(), so AmpOptimWrapper's backward/step are plain ones
        self.loss_scaler = torch.amp.GradScaler('cpu', enabled=False)
        self.cast_dtype = torch.bfloat16
        print_log(
            'DeviceAwareAmpOptimWrapper: no CUDA device, mixed precision '
            'runs as bfloat16 autocast on the CPU without loss scaling '
            f'(loss_scale={loss_scale!r} and dtype={dtype!r} apply on a '
            'GPU only).',
            logger='current')

    def state_dict(self) -> dict:
        """The optimizer's state dict, with the ``loss_scaler`` state on an
        accelerator (none on the CPU, where no scaler runs).

        Returns:
            The state dict.
        """
        state = super().state_dict()
        if self.on_cpu:
            state.pop('loss_scaler', None)
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Load the optimizer state (and, on an accelerator, the scaler's).

        Args:
            state_dict: A state dict of this wrapper, of
                :class:`AmpOptimWrapper` or of :class:`OptimWrapper`.
        """
        if self.on_cpu:
            state_dict.pop('loss_scaler', None)
        super().load_state_dict(state_dict)

    @contextmanager
    def optim_context(self, model: nn.Module) -> Iterator[None]:
        """Gradient-accumulation context plus autocast (bfloat16 on the
        CPU).

        Args:
            model: The training model.
        """
        if not self.on_cpu:
            with super().optim_context(model):
                yield
            return
        with OptimWrapper.optim_context(self, model), torch.autocast(
                'cpu', dtype=torch.bfloat16):
            yield
