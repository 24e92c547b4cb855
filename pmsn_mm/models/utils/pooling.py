"""Backbone outputs as feature vectors: the last output, maps pooled."""
from typing import Union

import torch.nn.functional as F
from torch import Tensor


def last_output(x: Union[Tensor, tuple, list]) -> Tensor:
    """The last element of a backbone/neck output tuple (or the tensor)."""
    return x[-1] if isinstance(x, (list, tuple)) else x


def pooled(x: Tensor) -> Tensor:
    """(B, C, H, W) maps average-pooled to (B, C); other shapes unchanged."""
    return F.adaptive_avg_pool2d(x, 1).flatten(1) if x.dim() == 4 else x
