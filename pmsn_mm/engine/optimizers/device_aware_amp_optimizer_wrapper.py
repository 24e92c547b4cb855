"""Mixed precision, in one place: the autocast dtype is written in the config
(``optim_wrapper=dict(type='DeviceAwareAmpOptimWrapper', dtype='bfloat16')``)
and nothing else chooses it: the wrapper, what ``--amp`` sets (:func:`set_amp`)
and the one-line refusal of mmengine's ``AmpOptimWrapper`` without an
accelerator (:func:`check_amp_device`). See docs/distributed.md.
"""
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Union

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

from ...config.errors import ConfigValueError

#: The autocast dtypes a config (``optim_wrapper.dtype``) or ``--amp`` may
#: name; the first is ``--amp``'s default.
AMP_DTYPES = ('bfloat16', 'float16')
#: The wrappers :func:`set_amp` turns into ``DeviceAwareAmpOptimWrapper``.
AMP_CONVERTIBLE = ('OptimWrapper', 'AmpOptimWrapper',
                   'DeviceAwareAmpOptimWrapper')


def cuda_bf16_native() -> bool:
    """Whether the current CUDA device computes bfloat16 natively
    (``torch.cuda.is_bf16_supported(including_emulation=False)``; False
    without CUDA)."""
    return is_cuda_available() and torch.cuda.is_bf16_supported(
        including_emulation=False)


def amp_device_available() -> bool:
    """Whether :class:`AmpOptimWrapper` can build (CUDA, NPU, MLU, MUSA)."""
    return (is_cuda_available() or is_npu_available() or is_mlu_available()
            or is_musa_available())


def amp_dtype(dtype: Any) -> torch.dtype:
    """The autocast dtype a config names, checked.

    Args:
        dtype: One of :data:`AMP_DTYPES` or the same ``torch.dtype``.

    Returns:
        ``torch.bfloat16`` or ``torch.float16``.

    Raises:
        ValueError: ``dtype`` is not one of :data:`AMP_DTYPES` (None
            included: the precision must be written in the config).
    """
    for name in AMP_DTYPES:
        if dtype == name or dtype is getattr(torch, name):
            return getattr(torch, name)
    raise ValueError(
        'DeviceAwareAmpOptimWrapper: optim_wrapper.dtype must be one of '
        f"{', '.join(repr(n) for n in AMP_DTYPES)} (the autocast dtype, "
        f'written in the config), but is {dtype!r}.')


def _wrapper_name(kind: Any) -> str:
    """A wrapper ``type`` as a class name (``'mmengine.AmpOptimWrapper'``
    and the class itself give ``'AmpOptimWrapper'``)."""
    if isinstance(kind, type):
        return kind.__name__
    return str(kind).split('.')[-1]


def set_amp(cfg: Any, dtype: str = AMP_DTYPES[0],
            option: str = '--amp') -> None:
    """``--amp``: sets exactly ``optim_wrapper.type`` (to
    ``'DeviceAwareAmpOptimWrapper'``) and ``optim_wrapper.dtype``, in place.

    Args:
        cfg: The config (``optim_wrapper`` of one of
            :data:`AMP_CONVERTIBLE`, ``OptimWrapper`` when it names none).
        dtype: One of :data:`AMP_DTYPES`. Defaults to ``'bfloat16'``.
        option: The flag, for the messages. Defaults to ``'--amp'``.

    Raises:
        ValueError: ``dtype`` is not allowed; no or another ``optim_wrapper``;
            ``'float16'`` without an accelerator.
    """
    if dtype not in AMP_DTYPES:
        raise ValueError(f'{option} must be one of {", ".join(AMP_DTYPES)}, '
                         f'but is {dtype!r}.')
    wrapper = cfg.get('optim_wrapper')
    if not wrapper:
        raise ValueError(f'{option}: the config has no optim_wrapper to run '
                         'in mixed precision.')
    name = _wrapper_name(wrapper.get('type', 'OptimWrapper'))
    if name not in AMP_CONVERTIBLE:
        raise ValueError(
            f'{option} sets optim_wrapper.type=\'DeviceAwareAmpOptimWrapper\''
            f' and works with optim_wrapper.type {", ".join(AMP_CONVERTIBLE)}'
            f', not the configured {name!r}.')
    if dtype == 'float16' and not amp_device_available():
        raise ValueError(
            f'{option} float16: float16 autocast needs a GPU (its loss '
            'scaler runs on an accelerator only) and none is available; on '
            f'the CPU use {option} bfloat16.')
    cfg.optim_wrapper.type = 'DeviceAwareAmpOptimWrapper'
    cfg.optim_wrapper.dtype = dtype


def check_amp_device(optim_wrapper: Any) -> None:
    """Refuse mmengine's ``AmpOptimWrapper`` without an accelerator, in one
    line (mmengine's refusal is an ``AssertionError`` with a traceback).

    Args:
        optim_wrapper: The config's ``optim_wrapper`` (only a dict is checked).

    Raises:
        ConfigValueError: ``optim_wrapper.type`` is ``AmpOptimWrapper`` and
            there is no GPU, NPU, MLU or MUSA device.
    """
    if not isinstance(optim_wrapper, dict) or amp_device_available():
        return
    if _wrapper_name(optim_wrapper.get('type', '')) != 'AmpOptimWrapper':
        return
    raise ConfigValueError(
        "optim_wrapper.type='AmpOptimWrapper' (mmengine's float16 autocast, "
        'which mmpretrain\'s --amp sets) needs a GPU, NPU, MLU or MUSA device'
        ' and none is available; on the CPU use optim_wrapper.type='
        "'DeviceAwareAmpOptimWrapper' with dtype='bfloat16' (pmsn_mm's "
        'tools/train.py --amp sets it).')


@OPTIM_WRAPPERS.register_module()
class DeviceAwareAmpOptimWrapper(AmpOptimWrapper):
    """mmengine's :class:`AmpOptimWrapper` with the autocast dtype written
    in the config, that also runs on the CPU (one config, one precision on
    any machine): ``'bfloat16'`` autocasts without a ``GradScaler`` on GPU
    and CPU alike (``loss_scale`` ignored, no ``loss_scaler`` in
    checkpoints); ``'float16'`` is mmengine's, refused on the CPU.

    Args:
        loss_scale: ``GradScaler`` setting where float16 runs (see
            :class:`AmpOptimWrapper`). Defaults to ``'dynamic'``.
        dtype: The autocast dtype, one of :data:`AMP_DTYPES` (or the same
            ``torch.dtype``). Required; the default None is refused.
        use_fsdp: See :class:`AmpOptimWrapper`. Defaults to False.
        **kwargs: Passed to :class:`OptimWrapper` (``optimizer``, ...).
    """

    #: The autocast dtype (``torch.bfloat16`` or ``torch.float16``).
    cast_dtype: torch.dtype

    def __init__(self,
                 loss_scale: Union[str, float, dict] = 'dynamic',
                 dtype: Optional[Union[str, torch.dtype]] = None,
                 use_fsdp: bool = False,
                 **kwargs) -> None:
        cast = amp_dtype(dtype)
        self.on_cpu = not amp_device_available()
        if self.on_cpu and cast == torch.float16:
            raise ValueError(
                "DeviceAwareAmpOptimWrapper: optim_wrapper.dtype='float16' "
                'needs a GPU (its loss scaler runs on an accelerator only) '
                "and none is available; on the CPU use dtype='bfloat16'.")
        if not self.on_cpu:
            super().__init__(
                loss_scale=loss_scale, dtype=cast, use_fsdp=use_fsdp,
                **kwargs)
            if cast == torch.bfloat16:
                self._scale_update_param = None
                self.loss_scaler = torch.amp.GradScaler(
                    'cuda' if is_cuda_available() else 'cpu', enabled=False)
                emulated = ' This GPU emulates bfloat16 (slow); ' \
                    "dtype='float16' runs float16 with loss scaling." \
                    if is_cuda_available() and not cuda_bf16_native() else ''
                print_log(
                    'DeviceAwareAmpOptimWrapper: bfloat16 autocast without '
                    f'loss scaling (loss_scale={loss_scale!r} is not used).'
                    + emulated,
                    logger='current')
            return
        OptimWrapper.__init__(self, **kwargs)
        self._scale_update_param = None
        # a disabled scaler: scale/unscale_/update do nothing, step() calls
        # optimizer.step(), so AmpOptimWrapper's backward/step are plain ones
        self.loss_scaler = torch.amp.GradScaler('cpu', enabled=False)
        self.cast_dtype = cast
        print_log(
            'DeviceAwareAmpOptimWrapper: no GPU, bfloat16 autocast on the '
            f'CPU without loss scaling (loss_scale={loss_scale!r} is not '
            'used).',
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
        """Load the optimizer state (and the scaler's, where one runs).

        Args:
            state_dict: A state dict of this wrapper, of
                :class:`AmpOptimWrapper` or of :class:`OptimWrapper`.
        """
        if not self.loss_scaler.is_enabled():
            state_dict.pop('loss_scaler', None)
        super().load_state_dict(state_dict)

    @contextmanager
    def optim_context(self, model: nn.Module) -> Iterator[None]:
        """Gradient accumulation plus autocast to :attr:`cast_dtype` (CPU too).

        Args:
            model: The training model.
        """
        if not self.on_cpu:
            with super().optim_context(model):
                yield
            return
        with OptimWrapper.optim_context(self, model), torch.autocast(
                'cpu', dtype=self.cast_dtype):
            yield
