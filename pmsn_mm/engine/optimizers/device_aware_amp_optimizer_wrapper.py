"""Mixed precision: bfloat16 without a loss scaler on CUDA devices with native
bfloat16 and on the CPU, float16 with a scaler on other accelerators."""
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


def cuda_bf16_native() -> bool:
    """Whether the current CUDA device computes bfloat16 natively
    (``torch.cuda.is_bf16_supported(including_emulation=False)``; False
    without CUDA)."""
    return is_cuda_available() and torch.cuda.is_bf16_supported(
        including_emulation=False)


def amp_device_available() -> bool:
    """Whether mmengine's :class:`AmpOptimWrapper` can build here (CUDA,
    NPU, MLU or MUSA)."""
    return (is_cuda_available() or is_npu_available() or is_mlu_available()
            or is_musa_available())


@OPTIM_WRAPPERS.register_module()
class DeviceAwareAmpOptimWrapper(AmpOptimWrapper):
    """mmengine's :class:`AmpOptimWrapper` that autocasts to bfloat16
    without a loss scaler wherever bfloat16 is native, and also runs on the
    CPU.

    Where the autocast dtype is chosen (``dtype=None``, the default):

    - **CUDA with native bfloat16** (``torch.cuda.is_bf16_supported(
      including_emulation=False)``: Ampere and later): autocast to
      bfloat16, no ``GradScaler``. bfloat16 has float32's exponent range,
      so gradients do not underflow and need no scaling; a scaler would
      only add its inf/NaN check and a host sync to every step.
    - **CUDA without it** (e.g. V100, T4): float16 with a ``GradScaler``
      configured by ``loss_scale``, exactly mmengine's wrapper.
    - **NPU, MLU, MUSA**: mmengine's wrapper (its default dtype, scaler).
    - **No accelerator**, where mmengine's wrapper refuses to build
      (``AmpOptimizerWrapper is only available training on gpu``): the
      forward and loss run under ``torch.autocast('cpu',
      dtype=torch.bfloat16)``, no scaler (the configured ``dtype`` is
      ignored there too: CPU autocast is bfloat16-only in mmengine and
      float16 would need the scaler).

    An explicit ``dtype`` is honoured on an accelerator: ``'float16'``
    runs float16 with the scaler (as mmengine), ``'bfloat16'`` runs
    bfloat16 without one. Wherever no scaler runs, ``loss_scale`` is
    ignored and one logged line says so. The PMSN
    loss computes in float32 under any autocast (``PMSN.loss`` leaves the
    autocast region of its device for the head).

    Gradient accumulation, clipping and the optimizer state behave as in
    :class:`OptimWrapper`. A run without a scaler saves no
    ``loss_scaler`` entry in its checkpoints (a float16 run resumed from
    one starts a fresh scaler) and ignores the ``loss_scaler`` of a
    float16 run's checkpoint.

    Args:
        loss_scale: ``GradScaler`` setting where float16 runs (see
            :class:`AmpOptimWrapper`). Defaults to ``'dynamic'``.
        dtype: Autocast dtype on an accelerator (``None``: bfloat16 on a
            CUDA device with native bfloat16, else float16; see above).
            Defaults to None.
        use_fsdp: See :class:`AmpOptimWrapper`. Defaults to False.
        **kwargs: Passed to :class:`OptimWrapper` (``optimizer``,
            ``accumulative_counts``, ``clip_grad``).
    """

    #: The autocast dtype (set by ``AmpOptimWrapper`` or, on the CPU, here).
    cast_dtype: Optional[torch.dtype]

    def __init__(self,
                 loss_scale: Union[str, float, dict] = 'dynamic',
                 dtype: Optional[Union[str, torch.dtype]] = None,
                 use_fsdp: bool = False,
                 **kwargs) -> None:
        self.on_cpu = not amp_device_available()
        if not self.on_cpu:
            if dtype is None and is_cuda_available():
                dtype = torch.bfloat16 if cuda_bf16_native() else \
                    torch.float16
            super().__init__(
                loss_scale=loss_scale, dtype=dtype, use_fsdp=use_fsdp,
                **kwargs)
            if self.cast_dtype == torch.bfloat16:
                self._scale_update_param = None
                self.loss_scaler = torch.amp.GradScaler(
                    'cuda' if is_cuda_available() else 'cpu', enabled=False)
                print_log(
                    'DeviceAwareAmpOptimWrapper: bfloat16 autocast without '
                    f'loss scaling (loss_scale={loss_scale!r} is not used).',
                    logger='current')
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
        """The optimizer's state dict, with the ``loss_scaler`` state where
        a scaler runs (float16; none with bfloat16 or on the CPU).

        Returns:
            The state dict.
        """
        state = super().state_dict()
        if not self.loss_scaler.is_enabled():
            state.pop('loss_scaler', None)
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Load the optimizer state (and, where a scaler runs, the
        scaler's).

        Args:
            state_dict: A state dict of this wrapper, of
                :class:`AmpOptimWrapper` or of :class:`OptimWrapper`.
        """
        if not self.loss_scaler.is_enabled():
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
