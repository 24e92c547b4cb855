"""Mixed precision: the prototype losses compute in float32."""
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
