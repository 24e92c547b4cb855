"""CPU copies of per-sample tensors that own their memory (for the results
that metrics keep and mmengine gathers across ranks)."""
from typing import List, Optional, Sequence

import torch
from torch import Tensor


def cpu_copies(tensors: Sequence[Tensor],
               dtype: Optional[torch.dtype] = None,
               flatten: bool = False) -> List[Tensor]:
    """Detached CPU copies of ``tensors``, each owning exactly its elements.

    A per-sample output is usually a view of its batch (a row of a (B, C)
    score matrix, the CLS token of a (B, T, D) backbone output), and
    ``.cpu()`` / ``.float()`` return such a view as is when it is already
    on the CPU in that dtype. Kept as a result, the view keeps the whole
    batch alive, and pickling it (mmengine's ``collect_results`` gathers
    the ranks' results so) writes the whole storage for every sample:
    B * T * D numbers instead of D. The copies made here hold their own
    elements only.

    Tensors of one shape, dtype and device (the usual case: the rows of one
    batch) are stacked, moved and cast together (one device transfer per
    batch), then each row is cloned out of the stack; others are copied one
    by one.

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
