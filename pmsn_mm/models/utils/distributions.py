"""Functions of probability vectors used by the losses, heads and the
evaluation: MSN's sharpening, KL divergence, entropy and the global mean
usage of the prototypes."""
from typing import Optional

import torch
import torch.nn.functional as F
from mmengine.dist import all_reduce
from torch import Tensor


def sharpen(probs: Tensor, temperature: float) -> Tensor:
    """MSN sharpening ``p ** (1 / T) / sum_k p_k ** (1 / T)``, per row.

    Computed as ``softmax(log(p) / T)`` (no underflow of the powers).

    Args:
        probs: Tensor of shape (N, K), rows are probability vectors.
        temperature: Sharpening temperature T, > 0.

    Returns:
        Tensor of shape (N, K), rows sum to 1.
    """
    return F.softmax(torch.log(probs) / temperature, dim=1)


def kl_divergence(p: Tensor, q: Tensor) -> Tensor:
    """``KL(p || q) = sum_k p_k (log p_k - log q_k)`` with a tiny floor.

    Inside the logs only, both are floored at ``torch.finfo(dtype).tiny``,
    so an empty entry gives finite values and gradients.

    Args:
        p: Tensor of shape (K,), a probability vector.
        q: Tensor of shape (K,), a probability vector.

    Returns:
        Scalar tensor.
    """
    tiny = torch.finfo(p.dtype).tiny
    return torch.sum(
        p * (torch.log(p.clamp_min(tiny)) - torch.log(q.clamp_min(tiny))))


def entropy(p: Tensor, log_p: Optional[Tensor] = None) -> Tensor:
    """Shannon entropy along the last dim, ``-sum_k p_k log p_k``.

    Args:
        p: Tensor of shape (..., K).
        log_p: Optional ``log p`` of the same shape (finite where
            ``p == 0``); defaults to ``log(max(p, tiny))``.

    Returns:
        Tensor of shape (...).
    """
    if log_p is None:
        log_p = torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))
    return -torch.sum(p * log_p, dim=-1)


@torch.no_grad()
def global_mean_usage(probs: Tensor) -> Tensor:
    """Mean probability of each prototype over the global batch.

    Args:
        probs: Tensor of shape (B_local, K), e.g. sharpened targets.

    Returns:
        Tensor of shape (K,), float64, the same on every rank (one
        all-reduce of K + 1 values).
    """
    count = probs.new_full((1, ), float(probs.shape[0]), dtype=torch.float64)
    totals = torch.cat([probs.double().sum(dim=0), count])
    all_reduce(totals, op='sum')
    return totals[:-1] / totals[-1]
