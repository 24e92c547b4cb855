"""Safe resume: allow-list exactly the non-tensor types of checkpoints.

``torch.load`` defaults to ``weights_only=True`` (torch >= 2.6), which refuses
the ``HistoryBuffer`` objects, numpy values and ``getattr(HistoryBuffer,
'min')`` that mmengine 0.10 checkpoints hold, so ``--resume`` would fail.
Instead of turning ``weights_only`` off, :func:`allow_checkpoint_globals`
allow-lists exactly those types; ``builtins.getattr`` maps to
:func:`restricted_getattr`, which resolves only the four statistic methods of
``HistoryBuffer``. Any other global is still refused by torch.
"""
from typing import Any, Callable, List, Tuple, Union, cast

import numpy as np
import torch
from mmengine.logging import HistoryBuffer

#: Dtypes of the numpy arrays and scalars in mmengine's message hub: float
#: histories and ETA (float64), counts (int64).
CHECKPOINT_DTYPES = ('float64', 'int64')

#: Attributes mmengine checkpoints ``getattr`` while unpickling, by owner.
ALLOWED_GETATTR = {HistoryBuffer: frozenset({'min', 'max', 'current', 'mean'})}


def restricted_getattr(obj: Any, name: str) -> Any:
    """``getattr`` limited to :data:`ALLOWED_GETATTR`.

    Args:
        obj: The object the checkpoint looks an attribute up on.
        name: The attribute name.

    Returns:
        The attribute, if ``(obj, name)`` is allow-listed.

    Raises:
        pickle.UnpicklingError: For any other lookup.
    """
    import pickle
    allowed = ALLOWED_GETATTR.get(obj, frozenset()) if isinstance(
        obj, type) else frozenset()
    if name not in allowed:
        raise pickle.UnpicklingError(
            f'Refusing getattr({obj!r}, {name!r}) while loading a checkpoint '
            'with weights_only=True: only '
            f'{ {k.__name__: sorted(v) for k, v in ALLOWED_GETATTR.items()} } '
            'are allowed.')
    return getattr(obj, name)


def _qualified(fn: Callable) -> Tuple[Callable, str]:
    return fn, f'{fn.__module__}.{fn.__name__}'


def checkpoint_safe_globals() -> List[Union[Callable, Tuple[Callable, str]]]:
    """The exact globals mmengine 0.10 training checkpoints contain.

    Numpy's reconstruct helpers are found through numpy's own ``__reduce__``
    so the names match numpy 1.x (``numpy.core``) and 2.x (``numpy._core``).

    Returns:
        A list for :func:`torch.serialization.add_safe_globals`.
    """
    # numpy's stubs type ``__reduce__()[0]`` ``str | Any``: a function here
    array_reconstruct = cast(Callable, np.zeros(1).__reduce__()[0])
    scalar_reconstruct = cast(Callable, np.float64(0).__reduce__()[0])
    return [
        HistoryBuffer,
        np.ndarray,
        np.dtype,
        # dtype classes of the arrays and scalars mmengine logs
        *(type(np.dtype(name)) for name in CHECKPOINT_DTYPES),
        _qualified(array_reconstruct),
        _qualified(scalar_reconstruct),
        (restricted_getattr, 'builtins.getattr'),
    ]


def allow_checkpoint_globals() -> None:
    """Allow-list :func:`checkpoint_safe_globals` for ``weights_only`` loads.

    Idempotent; called when :mod:`pmsn_mm` is imported.
    """
    torch.serialization.add_safe_globals(checkpoint_safe_globals())
