"""Count the host-to-device copies of a piece of code on any device (the CPU
proxy of a GPU step's blocking uploads).

On a GPU, a copy from pageable host memory to the device blocks the host
until the data is staged, and a copy that has to wait for queued kernels
drains the launch queue; a training step should upload only its batch,
once, ``non_blocking`` from pinned memory. On a CPU such copies are
invisible (``x.to('cpu')`` returns ``x``), and an aten-level counter
(:class:`~tests._profiling.op_counter.OpCounter`) cannot tell host data from
device data either. :class:`HostCopyCounter` is a ``TorchFunctionMode``
that follows where each tensor *lives in the modelled run* instead:

- **device** tensors: those it is told about (:meth:`~HostCopyCounter.
  mark_device`: the model's parameters and buffers, the optimiser's state),
  results of device factories (``torch.rand(..., device=dev)``,
  ``torch.zeros(..., device=dev)``, ``arange(device=dev)``: kernels, no
  copy), moved tensors and results of ops with any device input;
- **batch** tensors: the loader's batch (:meth:`~HostCopyCounter.
  mark_batch`: the tensors of ``inputs`` and the batch's other top-level
  tensors) and results of ops on batch tensors only;
- **host** tensors: the batch's data samples, tensors built from Python
  or numpy data without a device (``torch.tensor(list)``, ``as_tensor``,
  ``new_tensor`` on a host tensor), host factories (``torch.zeros(n)``),
  and results of ops on host tensors only.

A tensor it never saw made nor was told about (``torch.from_numpy``, which
torch does not route through the mode; a constant cached before counting
began) counts as a device tensor when it is on the device's type (in a CPU
run: always), as a host tensor otherwise.

It counts, per phase (:meth:`~HostCopyCounter.phase`), every host-to-device
copy: ``.to(dev)`` / ``.cuda()`` / ``copy_`` of a host or batch tensor into
the target device (counted even when it returns the tensor itself, as on a
CPU; the result is then a fresh alias so that it is known as a device
tensor), each factory that builds a device tensor from host data
(``torch.tensor(list, device=dev)``, ``new_tensor(list)`` on a device
tensor, ``torch.as_tensor(x, device=dev)``), indexing a device tensor with
a Python list (torch uploads the index), and ops that mix a host tensor of
one or more dimensions with device tensors (on CUDA either an error or an
implicit upload; 0-dim host tensors are passed by value and are free). A
``non_blocking`` move of a *batch* tensor in pinned memory is counted apart
as ``batch`` (the one upload a step needs, asynchronous on a GPU); every
other copy is ``blocking`` — a ``non_blocking`` move from pageable memory
included (a loader without ``pin_memory``, or a batch tensor converted on
the host before it moves, e.g. ``sizes.long().to(dev, non_blocking=True)``):
CUDA stages such a copy through a pinned buffer synchronously. Which batch
tensors are pinned is told by :meth:`~HostCopyCounter.mark_batch` (a
loader's ``pin_memory``, or ``Tensor.is_pinned``); a tensor an op makes on
the host is never pinned.

The device is a parameter (``device``), so the same code path gives the same
counts on a CPU as on CUDA. Functions that torch implements in Python are
seen as one call (the mode is off inside a call it handles).

:class:`HostCopyHook` runs mmengine's real training loop under the counter.
Importing this module registers it into mmpretrain's ``HOOKS`` (``import
pmsn_mm`` does not: this is test code); a run from a checkout asks for it
with::

    custom_imports = dict(imports=['pmsn_mm', 'tests._profiling.host_copies'],
                          allow_failed_imports=False)
    custom_hooks = [dict(type='HostCopyHook')]

(started from the repository root, or with it on ``PYTHONPATH``).
"""
import contextlib
import os.path as osp
import sys
import traceback
from collections import Counter, defaultdict
from types import FrameType
from typing import Any, Dict, Iterator, List, Optional, Union

import torch
from mmengine.hooks import Hook
from mmpretrain.registry import HOOKS
from mmpretrain.utils import get_ori_model
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary

DEVICE, BATCH, HOST = 'device', 'batch', 'host'
#: Factories that build a tensor from Python / numpy / tensor data.
DATA_FACTORIES = frozenset({'tensor', 'as_tensor', 'asarray'})
#: Tensor methods that move a tensor.
MOVES = frozenset({'to', 'cuda'})
_TORCH_DIR = osp.dirname(torch.__file__)
_THIS = osp.abspath(__file__)
_OVERRIDES = osp.join(_TORCH_DIR, 'overrides.py')


def _tensors(obj: Any) -> list:
    return [t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def _is_list_index(index: Any) -> bool:
    """Whether an index holds a Python list (torch turns it into a host
    tensor and uploads it)."""
    items = index if isinstance(index, tuple) else (index, )
    return any(isinstance(i, list) and len(i) > 0 for i in items)


class HostCopyCounter(TorchFunctionMode):
    """Count host-to-device copies per phase inside a ``with`` block.

    Example::

        counter = HostCopyCounter('cuda')
        counter.mark_device(model, optimizer)
        counter.mark_batch(data_batch)
        with counter, counter.phase('views'):
            data = model.data_preprocessor(data_batch, True)
        counter.blocking('views'), counter.batch('views')

    Args:
        device: The device the modelled run computes on (the CPU stands for
            itself in a CPU run: ``.to('cpu')`` of a host tensor counts).

    Attributes:
        copies: ``{phase: Counter(blocking=..., batch=..., pageable=...)}``;
            ``pageable`` counts the ``blocking`` copies that were
            ``non_blocking`` moves of batch data in pageable memory.
        sites: ``{phase: Counter('file:line function (how)': n)}`` of the
            blocking copies.
    """

    def __init__(self, device: Union[str, torch.device] = 'cpu') -> None:
        super().__init__()
        self.device = torch.device(device)
        self._kind = WeakIdKeyDictionary()
        self._pinned = WeakIdKeyDictionary()
        self.current = 'step'
        self.copies: Dict[str, Counter] = defaultdict(Counter)
        self.sites: Dict[str, Counter] = defaultdict(Counter)

    # ------------------------------------------------------------ marking
    def mark_device(self, *objs: Any) -> None:
        """Mark tensors as living on the device.

        Args:
            *objs: ``nn.Module`` (its parameters and buffers),
                ``torch.optim.Optimizer`` or mmengine optimiser wrapper (the
                state tensors), tensors, or containers of them.
        """
        for obj in objs:
            for t in self._collect(obj):
                self._kind[t] = DEVICE

    def mark_batch(self, data: Any, pinned: Optional[bool] = None) -> None:
        """Mark a loader's batch: its top-level tensors (``inputs`` and any
        other value of the batch dict that is a tensor or a list of
        tensors) as *batch*, the tensors of its data samples as *host*.

        Args:
            data: The collated batch.
            pinned: Whether the loader pinned its memory (None: ask each
                tensor, ``Tensor.is_pinned``; a CPU-only run models a
                GPU loader with ``pin_memory`` by passing its setting).
        """
        items = data.items() if isinstance(data, dict) else [('inputs', data)]
        for key, value in items:
            top = [value] if isinstance(value, torch.Tensor) else [
                v for v in value if isinstance(v, torch.Tensor)
            ] if isinstance(value, (list, tuple)) and key != 'data_samples' \
                else []
            for t in self._collect(value):
                self._kind[t] = HOST  # data samples, nested fields
            for t in top:
                self._kind[t] = BATCH
                if t.is_pinned() if pinned is None else pinned:
                    self._pinned[t] = True

    def kind(self, tensor: torch.Tensor) -> str:
        """``'device'``, ``'batch'`` or ``'host'``.

        A tensor never seen made nor marked is a device tensor when it is on
        the device's type (in a CPU run: always; e.g. a device constant
        cached before counting began), a host tensor otherwise.
        """
        return self._k(tensor)

    def _k(self, tensor: torch.Tensor) -> str:
        kind = self._kind.get(tensor)
        if kind is None:
            return DEVICE if tensor.device.type == self.device.type else HOST
        return kind

    @staticmethod
    def _collect(obj: Any) -> list:
        from mmengine.structures import BaseDataElement
        if isinstance(obj, torch.Tensor):
            return [obj]
        if isinstance(obj, torch.nn.Module):
            return list(obj.parameters()) + list(obj.buffers())
        optimizers = []
        if hasattr(obj, 'optimizer') and isinstance(obj.optimizer,
                                                    torch.optim.Optimizer):
            optimizers = [obj.optimizer]
        elif hasattr(obj, 'optim_wrappers'):  # OptimWrapperDict
            optimizers = [w.optimizer for w in obj.optim_wrappers.values()]
        elif isinstance(obj, torch.optim.Optimizer):
            optimizers = [obj]
        if optimizers:
            return [t for opt in optimizers for state in opt.state.values()
                    for t in _tensors(dict(state))]
        if isinstance(obj, BaseDataElement):
            return [t for v in obj.all_values()
                    for t in HostCopyCounter._collect(v)]
        if isinstance(obj, dict):
            return [t for v in obj.values()
                    for t in HostCopyCounter._collect(v)]
        if isinstance(obj, (list, tuple)):
            return [t for v in obj for t in HostCopyCounter._collect(v)]
        return []

    # ------------------------------------------------------------ results
    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Count the copies of a block under ``name``."""
        previous, self.current = self.current, name
        try:
            yield
        finally:
            self.current = previous

    def blocking(self, phase: Optional[str] = None) -> int:
        """Blocking host-to-device copies of a phase (None: all phases)."""
        return self._total('blocking', phase)

    def batch(self, phase: Optional[str] = None) -> int:
        """``non_blocking`` moves of batch tensors of a phase (None: all)."""
        return self._total('batch', phase)

    def _total(self, key: str, phase: Optional[str]) -> int:
        if phase is not None:
            return self.copies[phase][key] if phase in self.copies else 0
        return sum(c[key] for c in self.copies.values())

    def reset(self) -> None:
        """Forget the counts (not which tensors live where)."""
        self.copies.clear()
        self.sites.clear()

    def summary(self, phase: Optional[str] = None, top: int = 5) -> str:
        """``'N blocking (site: n, ...), M batch'`` for a phase or all."""
        sites: Counter = Counter()
        for name, counter in self.sites.items():
            if phase is None or name == phase:
                sites.update(counter)
        listed = ', '.join(f'{k}: {v}' for k, v in sites.most_common(top))
        return (f'{self.blocking(phase)} blocking host-to-device copies '
                f'({listed or "-"}), {self.batch(phase)} batch uploads')

    # ------------------------------------------------------------ the mode
    def _matches(self, device: Any) -> bool:
        if device is None:
            return False
        device = torch.device(device)
        return device.type == self.device.type and (
            device.index is None or self.device.index is None
            or device.index == self.device.index)

    def _count(self, how: str, src: Optional[torch.Tensor] = None,
               non_blocking: bool = False) -> None:
        counts = self.copies[self.current]
        if (src is not None and non_blocking
                and self._k(src) == BATCH):
            if self._pinned.get(src, False):
                counts['batch'] += 1
                return
            counts['pageable'] += 1
            how = f'{how} non_blocking from pageable memory'
        counts['blocking'] += 1
        self.sites[self.current][f'{self._site()} ({how})'] += 1

    @staticmethod
    def _site() -> str:
        """The innermost caller outside torch and this module."""
        for frame in reversed(traceback.extract_stack()):
            path = osp.abspath(frame.filename)
            if path != _THIS and not path.startswith(_TORCH_DIR):
                return (f'{osp.basename(frame.filename)}:{frame.lineno} '
                        f'{frame.name}')
        return '?'

    @staticmethod
    def _torch_internal() -> bool:
        """Whether torch itself made the call (e.g. the optimisers' host
        step counters, ``torch.tensor(0.0, device='cpu')``)."""
        frame: Optional[FrameType] = sys._getframe(1)
        while frame is not None and osp.abspath(
                frame.f_code.co_filename) in (_THIS, _OVERRIDES):
            frame = frame.f_back
        return frame is not None and osp.abspath(
            frame.f_code.co_filename).startswith(_TORCH_DIR)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, '__name__', '')
        method = getattr(func, '__qualname__', '').startswith('TensorBase')
        inputs = _tensors((args, kwargs))
        src = args[0] if method and args and isinstance(
            args[0], torch.Tensor) else None
        kinds = [self._k(t) for t in inputs]

        if method and name in MOVES and src is not None:
            return self._move(func, name, src, args, kwargs)
        if method and name == 'copy_' and src is not None:
            value = args[1] if len(args) > 1 else kwargs.get('src')
            if (self._k(src) == DEVICE and isinstance(
                    value, torch.Tensor)
                    and self._k(value) != DEVICE):
                blocking = args[2] if len(args) > 2 else kwargs.get(
                    'non_blocking', False)
                self._count('copy_', value, bool(blocking))
            return func(*args, **kwargs)
        if not method and name in DATA_FACTORIES:
            return self._data_factory(func, name, args, kwargs)
        if method and name == 'new_tensor' and src is not None:
            device = kwargs.get('device')
            on_device = (self._matches(device) if device is not None else
                         self._k(src) == DEVICE)
            data = args[1] if len(args) > 1 else kwargs.get('data')
            out = func(*args, **kwargs)
            if on_device:
                if not (isinstance(data, torch.Tensor)
                        and self._k(data) == DEVICE):
                    self._count('new_tensor')
                self._kind[out] = DEVICE
            else:
                self._kind[out] = HOST
            return out
        if (method and name in ('__getitem__', '__setitem__')
                and src is not None and self._k(src) == DEVICE
                and len(args) > 1 and _is_list_index(args[1])):
            self._count(f'{name} with a list index')
        if DEVICE in kinds and any(
                k != DEVICE and t.dim() > 0 for t, k in zip(inputs, kinds)):
            self._count(f'{name} of host and device tensors')
        out = func(*args, **kwargs)
        if DEVICE in kinds:
            kind = DEVICE
        elif inputs:
            kind = BATCH if all(k == BATCH for k in kinds) else HOST
            if name == 'cpu':
                kind = HOST
        else:  # a factory: on the device only when told so
            kind = HOST
        device = kwargs.get('device')
        if device is None and not inputs:  # e.g. a custom op's device arg
            device = next((a for a in args if isinstance(a, torch.device)),
                          None)
        if self._matches(device):  # zeros_like(x, device=), custom ops
            kind = DEVICE
        self._tag(out, kind, inputs)
        return out

    def _tag(self, out: Any, kind: str, inputs: list) -> None:
        for t in _tensors(out):
            if not any(t is i for i in inputs):  # in place: unchanged
                self._kind[t] = kind

    def _move(self, func, name, src, args, kwargs):
        """``Tensor.to`` / ``Tensor.cuda``."""
        if name == 'cuda':
            device = args[1] if len(args) > 1 else kwargs.get('device')
            device = torch.device('cuda' if device is None else device)
            if device.type != 'cuda':
                device = torch.device('cuda', device.index)
            non_blocking = bool(kwargs.get('non_blocking', False))
        else:
            rest = {k: v for k, v in kwargs.items() if k != 'copy'}
            device, _, non_blocking, _ = torch._C._nn._parse_to(
                *args[1:], **rest)
        out = func(*args, **kwargs)
        kind = self._k(src)
        if (name == 'to' and len(args) > 1 and isinstance(
                args[1], torch.Tensor)
                and self._k(args[1]) != DEVICE):
            device = None  # to a host tensor's device and dtype
        if device is None or (kind == DEVICE and self._matches(device)):
            if out is not src:
                self._kind[out] = kind
            return out
        if not self._matches(device):  # to another device: the host
            if out is not src:
                self._kind[out] = HOST
            return out
        self._count(f'.{name}', src, non_blocking)
        if out is src:  # on the device already (a CPU run): a fresh alias
            out = src.view_as(src)
        self._kind[out] = DEVICE
        return out

    def _data_factory(self, func, name, args, kwargs):
        """``torch.tensor`` / ``as_tensor`` / ``asarray``."""
        data = args[0] if args else kwargs.get('data', kwargs.get('obj'))
        device = kwargs.get('device')
        out = func(*args, **kwargs)
        if isinstance(data, torch.Tensor):
            kind = self._k(data)
            if device is None or (kind == DEVICE and self._matches(device)):
                if out is not data:
                    self._kind[out] = kind
                return out
        if self._matches(device) and not (torch.device(device).type == 'cpu'
                                          and self._torch_internal()):
            self._count(f'torch.{name}', data if isinstance(
                data, torch.Tensor) else None, False)
            if out is data:  # on the device already (a CPU run)
                out = data.view_as(data)
            self._kind[out] = DEVICE
        else:
            self._kind[out] = HOST
        return out


@HOOKS.register_module()
class HostCopyHook(Hook):
    """Run the training loop under a :class:`HostCopyCounter` and keep its
    counts per iteration and phase (the CPU proxy of a GPU loop's blocking
    uploads; a diagnostic, not for production runs). Registered by
    importing this module (``custom_imports``: see the module docstring).

    From ``before_train`` to ``after_train`` the counter is the innermost
    ``TorchFunctionMode``; the model's parameters and buffers and the
    optimiser's state are device tensors, each batch handed to
    ``before_train_iter`` is marked as the loader's batch (this hook has the
    highest priority: it runs first). Phases of an iteration:

    - ``views``: the data pre-processor's forward (upload, views);
    - ``train_step``: the rest of ``model.train_step`` (forward, loss,
      backward, clipping, optimiser step);
    - ``hooks``: the ``before_train_iter`` and ``after_train_iter`` hooks
      (``TargetEMAHook``'s update, the guard, the logger, ...) and, with
      ``num_workers=0``, the loading of the next batch;
    - ``val``: a validation run inside the training loop.

    A ``non_blocking`` upload of the batch counts as ``batch`` only from
    pinned memory: on a GPU run the loader's tensors (``pin_memory=True``
    pins them), on a CPU run the config's ``train_dataloader.pin_memory``
    (what the same config would do on a GPU; nothing can be pinned here).

    Args:
        device: The modelled device (None: the data pre-processor's).

    Attributes:
        iters: One ``{phase: dict(blocking=..., batch=..., sites=...)}`` per
            finished iteration.
    """

    priority = 'HIGHEST'

    def __init__(self, device: Optional[Union[str, torch.device]] = None):
        self.device = device
        self.counter: Optional[HostCopyCounter] = None
        self._pinned: Optional[bool] = None
        self.iters: List[Dict[str, dict]] = []
        self._handles: list = []
        self._started = False

    def before_train(self, runner) -> None:
        model = get_ori_model(runner.model)
        pre = model.data_preprocessor
        device = self.device or getattr(pre, 'device', None) or next(
            model.parameters()).device
        self.counter = HostCopyCounter(device)
        self.counter.mark_device(runner.model, runner.optim_wrapper)
        # the loader as built (the saved config holds what the user wrote)
        loader = getattr(getattr(runner, 'train_loop', None), 'dataloader',
                         None)
        self._pinned = None if torch.device(
            device).type == 'cuda' else bool(
                getattr(loader, 'pin_memory', False))
        self.iters = []
        self._handles = [
            pre.register_forward_pre_hook(lambda *_: self._set('views')),
            pre.register_forward_hook(lambda *_: self._set('train_step')),
        ]
        self._set('hooks')
        self.counter.__enter__()

    def _set(self, phase: str) -> None:
        if self.counter is not None:
            self.counter.current = phase

    def _record(self) -> None:
        assert self.counter is not None  # the callers return without one
        if self._started:
            self.iters.append({
                phase: dict(blocking=c['blocking'], batch=c['batch'],
                            sites=dict(self.counter.sites[phase]))
                for phase, c in self.counter.copies.items()
            })
        self.counter.reset()

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        if self.counter is None:
            return
        self._record()
        self._started = True
        if data_batch is not None:
            self.counter.mark_batch(data_batch, pinned=self._pinned)
        self._set('hooks')

    def after_train_iter(self, runner, batch_idx: int, data_batch=None,
                         outputs=None) -> None:
        self._set('hooks')

    def before_val(self, runner) -> None:
        self._set('val')

    def after_val(self, runner) -> None:
        self._set('hooks')

    def after_train(self, runner) -> None:
        if self.counter is None:
            return
        self._record()
        self._started = False
        self.counter.__exit__(None, None, None)
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for i, phases in enumerate(self.iters):
            runner.logger.info(
                f'HostCopyHook iteration {i + 1}: ' + '; '.join(
                    f'{p} {c["blocking"]} blocking, {c["batch"]} batch'
                    for p, c in phases.items()))
