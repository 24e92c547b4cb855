"""Mixed precision: the prototype losses compute in float32."""
from contextlib import contextmanager
from typing import Iterator

import torch
from torch import Tensor


def upcast(x: Tensor) -> Tensor:
    """Half precision (AMP) is computed in float32, as in MSN and SwAV;
    float32/float64 are kept.

    Args:
        x: Any tensor.

    Returns:
        ``x.float()`` for float16/bfloat16, else ``x``.
    """
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


@contextmanager
def autocast_off(device_type: str) -> Iterator[None]:
    """Leave an enclosing ``torch.autocast`` region of ``device_type``.

    :func:`upcast` alone does not keep a computation in float32 under
    autocast (matmul inputs are cast back down; on the CPU softmax too);
    inside this context upcast tensors stay float32.

    Args:
        device_type: ``'cpu'``, ``'cuda'``, ... (``tensor.device.type``).
    """
    with torch.autocast(device_type=device_type, enabled=False):
        yield
