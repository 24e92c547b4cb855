"""CPU copies of per-sample tensors that own their memory (for the results
that metrics keep and mmengine gathers across ranks)."""
from typing import List, Optional, Sequence

import torch
from torch import Tensor


def cpu_copies(tensors: Sequence[Tensor],
               dtype: Optional[torch.dtype] = None,
               flatten: bool = False) -> List[Tensor]:
    """Detached CPU copies of ``tensors``, each owning exactly its elements.

    A per-sample view of its batch would keep the batch alive and pickle
    its whole storage per sample (``collect_results``). Tensors of one
    shape, dtype and device move together, then each row is cloned.

    Args:
        tensors: Per-sample tensors, on any device.
        dtype: Dtype of the copies, or None to keep each tensor's.
        flatten: Flatten every tensor to 1-D. Defaults to False.

    Returns:
        One contiguous CPU tensor per input, in order.
    """
    tensors = [t.detach().reshape(-1) if flatten else t.detach()
               for t in tensors]
    if not tensors:
        return []
    if len({(t.shape, t.dtype, t.device) for t in tensors}) == 1:
        batch = torch.stack(tensors).to(device='cpu', dtype=dtype)
        return [row.clone() for row in batch]
    return [t.to(device='cpu', dtype=dtype, copy=True).contiguous()
            for t in tensors]
