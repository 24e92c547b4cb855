"""Count the aten ops a piece of code dispatches, and the host syncs among
them, on any device (the CPU proxy of a GPU step's launches and stalls).

On a GPU every op is (at least) one kernel launch, and an op whose result
the host must read before it can go on drains the launch queue: a *host
sync*. :class:`OpCounter` is a ``TorchDispatchMode`` that sees every aten op
below autograd (forward, backward and optimizer alike) and classifies it:

- ``aten._local_scalar_dense``: ``.item()``, ``bool(t)``, ``int(t)``,
  ``float(t)``, ``if t:`` — a device value read by the host;
- ops whose output *shape* depends on device values: ``nonzero``,
  ``masked_select``, ``unique*``, ``repeat_interleave`` without
  ``output_size``, indexing / ``index_put_`` with a boolean mask;
- ``equal`` / ``is_nonzero`` (a Python bool out of device data);
- a copy from a non-CPU tensor to the CPU (``.cpu()``, ``.tolist()``,
  ``.numpy()``).

The count is the same on CPU as on CUDA for the same code path, which is
what a test can check without a GPU. :func:`assert_host_syncs` is the check
the tests of the zero-host-sync rule use (its failure names the rule's
section of CONTRIBUTING.md).
"""
from collections import Counter
from typing import Any, Dict, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import rule_failure

#: aten packets whose result the host has to wait for.
SYNC_PACKETS = frozenset({
    '_local_scalar_dense', 'nonzero', 'masked_select', 'unique',
    '_unique', '_unique2', 'unique_dim', 'unique_consecutive', 'equal',
    'is_nonzero'
})


def _has_bool_index(args: Any) -> bool:
    indices = args[1] if len(args) > 1 else None
    if not isinstance(indices, (list, tuple)):
        return False
    return any(
        isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)
        for i in indices)


def is_host_sync(func: Any, args: Any, kwargs: Dict[str, Any]) -> bool:
    """Whether an aten op makes the host wait for the device.

    Args:
        func: The ``OpOverload``.
        args: Its positional arguments.
        kwargs: Its keyword arguments.
    """
    packet = func.overloadpacket.__name__
    if packet in SYNC_PACKETS:
        return True
    if packet == 'repeat_interleave':  # tensor repeats: a data-sized output
        return func._overloadname in ('Tensor', 'self_Tensor') and kwargs.get(
            'output_size') is None
    if packet in ('index', 'index_put', 'index_put_', '_index_put_impl'):
        return _has_bool_index(args)
    if packet in ('_to_copy', 'copy_'):
        src = args[1] if packet == 'copy_' else args[0]
        dst_device = (args[0].device if packet == 'copy_' else
                      kwargs.get('device'))
        return (isinstance(src, torch.Tensor) and src.device.type != 'cpu'
                and dst_device is not None
                and torch.device(dst_device).type == 'cpu')
    return False


class OpCounter(TorchDispatchMode):
    """Count dispatched aten ops and host syncs inside a ``with`` block.

    Example::

        with OpCounter() as counter:
            loss = model.loss(inputs, data_samples)['loss']
        counter.ops, counter.syncs, counter.sync_ops.most_common()

    Attributes:
        ops: Number of aten ops dispatched.
        syncs: Number of them that are host syncs (:func:`is_host_sync`).
        op_names: ``Counter`` of op names.
        sync_ops: ``Counter`` of the host-sync op names.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.syncs = 0
        self.op_names: Counter = Counter()
        self.sync_ops: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.overloadpacket.__name__)
        self.ops += 1
        self.op_names[name] += 1
        if is_host_sync(func, args, kwargs):
            self.syncs += 1
            self.sync_ops[name] += 1
        return func(*args, **kwargs)

    def summary(self, top: Optional[int] = 10) -> str:
        """``'N ops, M host syncs (op: count, ...)'``.

        Args:
            top: How many sync op names to list (None: all).
        """
        listed = ', '.join(f'{k}: {v}'
                           for k, v in self.sync_ops.most_common(top))
        return f'{self.ops} ops, {self.syncs} host syncs ({listed})'


def assert_host_syncs(counter: OpCounter, allowed: int = 0,
                      what: str = 'the counted code',
                      exact: bool = False) -> None:
    """Fail when the counted code made more host syncs than ``allowed``,
    with a message that lists them and names the rule (CONTRIBUTING.md,
    "The training step makes no host sync").

    Args:
        counter: The :class:`OpCounter` the code ran under.
        allowed: Host syncs the code may make; anything above 0 is an
            exception to the rule, and the call site says why in a comment.
        what: What was counted, for the message (a phase, a batch size).
        exact: Require exactly ``allowed`` syncs (a test of the one read an
            exception makes).

    Raises:
        AssertionError: Too many syncs (or, with ``exact``, a different
            number).
    """
    wrong = (counter.syncs != allowed if exact else counter.syncs > allowed)
    if wrong:
        raise AssertionError(rule_failure(
            f'{what}: {counter.summary(None)}; '
            f'{"exactly" if exact else "at most"} {allowed} allowed'))
