"""Sinkhorn-Knopp balancing of target probabilities (MSN, SwAV), optionally
towards a non-uniform cluster prior."""
from typing import Optional

import torch
from mmengine.dist import all_reduce, get_world_size
from torch import Tensor

# How far the sum of ``col_marginal`` may be from 1 (float32 round-off of a
# normalised prior with thousands of entries stays far below this).
MARGINAL_SUM_TOL = 1e-4


def check_col_marginal(col_marginal: Tensor, num_protos: int) -> None:
    """Raise ``ValueError`` unless ``col_marginal`` is a prior over K.

    Args:
        col_marginal: Tensor of shape (K,).
        num_protos: K, the number of prototypes (columns of the targets).
    """
    if col_marginal.dim() != 1 or col_marginal.shape[0] != num_protos:
        raise ValueError(
            'col_marginal must have shape (K,) with K = number of prototypes '
            f'= {num_protos}, but has shape {tuple(col_marginal.shape)}.')
    if not bool(torch.isfinite(col_marginal).all()):
        raise ValueError('col_marginal must be finite (no NaN or inf).')
    if not bool((col_marginal > 0).all()):
        bad = torch.nonzero(col_marginal <= 0).flatten().tolist()
        raise ValueError(
            'col_marginal must be > 0 for every prototype, but entries '
            f'{bad} are <= 0.')
    total = float(col_marginal.double().sum())
    if abs(total - 1.0) > MARGINAL_SUM_TOL:
        raise ValueError(f'col_marginal must sum to 1 (within '
                         f'{MARGINAL_SUM_TOL}), but sums to {total}.')


def _check_proto_mass(proto_mass: Tensor) -> None:
    """A prototype without mass cannot be given any: raise, not NaN."""
    if not bool((proto_mass > 0).all()):
        empty = torch.nonzero(
            ~(proto_mass.flatten() > 0)).flatten().tolist()
        raise ValueError(
            f'distributed_sinkhorn: prototypes {empty} have zero (or NaN) '
            'total mass over the global batch, so no scaling can give them '
            'their marginal (the output would be NaN). Their inputs '
            'underflowed: raise the sharpening temperature / epsilon, or '
            'compute in float64.')


@torch.no_grad()
def distributed_sinkhorn(probs: Tensor,
                         num_iters: int = 3,
                         col_marginal: Optional[Tensor] = None,
                         validate: bool = True) -> Tensor:
    """Balance soft assignments over the global batch (MSN/SwAV
    Sinkhorn-Knopp), towards uniform or prior cluster sizes.

    On ``Q = probs.T`` (K x B), each iteration rescales every prototype's
    mass to ``col_marginal[k]`` (``1 / K`` when None), then every sample's
    to ``1 / B`` (B the global batch); rows of the output sum to 1 and,
    once converged, column ``k`` to ``B * col_marginal[k]``: the projection
    onto the constraint set of Assran et al., ICLR 2023, arXiv:2210.07277,
    eq. (8), ``P 1_N = N * prior`` (eq. (8) states the uniform case; eq. (7)
    with ``N_k = N * prior_k``). Prototype sums are all-reduced (equal to
    single-process Sinkhorn on the whole batch); ``col_marginal=None`` is
    official MSN's ``distributed_sinkhorn``. Kept instead of mmpretrain's,
    whose marginals are per-rank with several ranks.

    Args:
        probs: Tensor of shape (B_local, K), non-negative (e.g. sharpened
            targets); every prototype needs positive global mass. Not modified.
        num_iters: Number of Sinkhorn iterations, >= 1. Defaults to 3.
        col_marginal: Tensor of shape (K,): each prototype's target
            share, > 0, summing to 1 (within ``MARGINAL_SUM_TOL``). None:
            uniform, with the official code's arithmetic. Defaults to None.
        validate: Check the values of ``col_marginal`` and the prototype
            masses (``ValueError`` instead of a NaN output; host syncs, so
            the losses pass False in training steps). Shapes are always
            checked. Defaults to True.

    Returns:
        Tensor of shape (B_local, K): rows sum to 1; over the global batch
        column ``k`` approaches ``B * col_marginal[k]`` (``B / K``).
    """
    if num_iters < 1:
        raise ValueError(f'num_iters must be >= 1 but is {num_iters}.')
    if probs.dim() != 2:
        raise ValueError('probs must have shape (B, K) but has shape '
                         f'{tuple(probs.shape)}.')
    q = probs.detach().t().clone()  # (K, B_local)
    num_protos = q.shape[0]
    batch_size = q.shape[1] * get_world_size()
    if col_marginal is not None:
        if validate:
            check_col_marginal(col_marginal, num_protos)
        elif col_marginal.dim() != 1 or col_marginal.shape[0] != num_protos:
            raise ValueError(
                'col_marginal must have shape (K,) with K = number of '
                f'prototypes = {num_protos}, but has shape '
                f'{tuple(col_marginal.shape)}.')
        marginal = col_marginal.detach().to(device=q.device, dtype=q.dtype)
        marginal = (marginal / marginal.sum()).unsqueeze(1)  # (K, 1)

    total = q.sum()
    all_reduce(total, op='sum')
    q /= total
    for it in range(num_iters):
        # Each prototype gets total mass col_marginal[k] (1 / K) over the
        # global batch.
        proto_mass = q.sum(dim=1, keepdim=True)
        all_reduce(proto_mass, op='sum')
        if it == 0 and validate:
            _check_proto_mass(proto_mass)
        q /= proto_mass
        if col_marginal is None:
            q /= num_protos
        else:
            q *= marginal
        # Each sample gets total mass 1 / B.
        q /= q.sum(dim=0, keepdim=True)
        q /= batch_size
    q *= batch_size  # samples sum to 1: an assignment
    return q.t()
