"""Sinkhorn-Knopp balancing of target probabilities, as in MSN."""
import torch
from torch import Tensor

from .dist import all_reduce_sum, get_world_size


@torch.no_grad()
def distributed_sinkhorn(probs: Tensor, num_iters: int = 3) -> Tensor:
    """Balance soft assignments over the global batch (MSN's Sinkhorn-Knopp).

    Starting from the (already sharpened) probabilities, alternately
    rescales every prototype's total mass to ``B / K`` and every sample's
    mass to 1, where ``B`` is the global batch size (``W`` ranks times the
    local batch). Prototype sums are all-reduced across ranks, so the result
    equals single-process Sinkhorn on the concatenated batch. The last step
    normalises samples, so every output row sums to 1 exactly.

    This re-implements ``distributed_sinkhorn`` of the official MSN
    (``src/losses.py``). mmpretrain's
    ``mmpretrain.models.losses.swav_loss.distributed_sinkhorn`` is not reused
    because it is not equivalent: it takes scores and applies
    ``exp(scores / epsilon)`` (SwAV), and it all-reduces the prototype sums
    only when one of them is zero (and then after adding ``1e-12``), so with
    more than one rank its prototype marginals are per-rank, not global.

    Assumes every rank holds the same number of samples (as the official
    code does).

    Args:
        probs: Tensor of shape (B_local, K), non-negative, e.g. sharpened
            target probabilities. Not modified.
        num_iters: Number of Sinkhorn iterations, >= 1. Defaults to 3.

    Returns:
        Tensor of shape (B_local, K): rows sum to 1; over the global batch
        each prototype's column sum approaches ``B / K``.
    """
    if num_iters < 1:
        raise ValueError(f'num_iters must be >= 1 but is {num_iters}.')
    if probs.dim() != 2:
        raise ValueError('probs must have shape (B, K) but has shape '
                         f'{tuple(probs.shape)}.')
    q = probs.detach().t().clone()  # (K, B_local)
    num_protos = q.shape[0]
    batch_size = q.shape[1] * get_world_size()

    q /= all_reduce_sum(q.sum())
    for _ in range(num_iters):
        # Each prototype gets total mass 1 / K over the global batch.
        q /= all_reduce_sum(q.sum(dim=1, keepdim=True))
        q /= num_protos
        # Each sample gets total mass 1 / B.
        q /= q.sum(dim=0, keepdim=True)
        q /= batch_size
    q *= batch_size  # samples sum to 1: an assignment
    return q.t()
