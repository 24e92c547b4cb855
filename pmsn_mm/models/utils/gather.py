"""Differentiable all-gather for losses whose statistics span ranks.

Behaviour of ``FullGatherLayer`` in the official VICReg code
(facebookresearch/vicreg, ``main_vicreg.py``): the forward concatenates every
rank's rows, the backward sums, over ranks, the gradients that the gathered
tensor received and returns this rank's slice.
"""
import torch
import torch.distributed as dist
from torch import Tensor

from .dist import get_world_size


class _AllGatherSumGrad(torch.autograd.Function):
    """All-gather along dim 0; backward: all-reduce sum, keep own rows."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        x = x.contiguous()
        gathered = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, x)
        ctx.rows = x.shape[0]
        return torch.cat(gathered, dim=0)

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        start = dist.get_rank() * ctx.rows
        return grad[start:start + ctx.rows]


def all_gather_with_grad(x: Tensor) -> Tensor:
    """Concatenate ``x`` from all ranks along dim 0, differentiably.

    Forward: ``y = cat_r(x_r)``, rank ``r``'s rows at
    ``[r * N:(r + 1) * N]`` (the same ``y`` on every rank).

    Backward: rank ``r`` receives ``sum_s dL_s / dy[rows of r]``, the sum of
    all ranks' incoming gradients on its rows. DDP averages parameter
    gradients, i.e. optimises ``J = (1 / W) * sum_s L_s``; since
    ``dJ / dx_r = (1 / W) * sum_s dL_s / dx_r``, summing here and averaging in
    DDP gives the exact gradient of ``J`` (as the official VICReg does).

    With world size 1 this is the identity (same tensor, same graph).

    Args:
        x: Tensor of shape (N, ...), the same shape on every rank.

    Returns:
        Tensor of shape (W * N, ...).
    """
    if get_world_size() == 1:
        return x
    return _AllGatherSumGrad.apply(x)


__all__ = ['all_gather_with_grad']
