"""Distributed helpers for losses whose statistics span the global batch.

Every helper is the identity (or a plain copy) when ``torch.distributed`` is
not initialised or the world size is 1, so the same code runs in single-process
training and tests.
"""
import torch
import torch.distributed as dist
from torch import Tensor


def get_world_size() -> int:
    """Return the number of processes, 1 when not running distributed."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


class _AllReduceMean(torch.autograd.Function):
    """All-reduce mean whose backward is the all-reduce mean of the grads."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        out = x.detach().clone().contiguous()
        dist.all_reduce(out)
        return out / dist.get_world_size()

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        grad = grad.detach().clone().contiguous()
        dist.all_reduce(grad)
        return grad / dist.get_world_size()


def all_reduce_mean_with_grad(x: Tensor) -> Tensor:
    """Average ``x`` over all ranks, differentiably.

    Forward: ``y = (1 / W) * sum_r x_r`` (the same ``y`` on every rank).

    Backward: the gradient sent to ``x_r`` is the all-reduce mean of the
    incoming gradients ``g_s = dL_s / dy`` of the per-rank losses ``L_s``.
    This is the exact gradient of the global objective under DDP: DDP
    optimises ``J = (1 / W) * sum_s L_s`` by averaging per-rank parameter
    gradients, and ``dJ / dx_r = (1 / W) * sum_s g_s * dy / dx_r
    = (1 / W) * mean_s(g_s)``; the leading ``1 / W`` is supplied by DDP's
    gradient averaging, so each rank must back-propagate ``mean_s(g_s)``.
    (The official MSN ``AllReduce`` back-propagates ``g_r`` unchanged, which
    agrees only when all ranks' incoming gradients are identical.)

    With world size 1 this is the identity (same tensor, same graph). Assumes
    every rank contributes a tensor of the same shape.

    Args:
        x: Tensor of any shape, e.g. the per-rank mean probabilities (K,).

    Returns:
        Tensor of the same shape: the mean of ``x`` over ranks.
    """
    if get_world_size() == 1:
        return x
    return _AllReduceMean.apply(x)


@torch.no_grad()
def all_reduce_sum(x: Tensor) -> Tensor:
    """Sum ``x`` over all ranks without gradient; returns a new tensor.

    Args:
        x: Tensor of any shape (same shape on every rank).

    Returns:
        Tensor of the same shape holding the sum over ranks (a copy of ``x``
        when not distributed).
    """
    out = x.detach().clone().contiguous()
    if get_world_size() > 1:
        dist.all_reduce(out)
    return out


@torch.no_grad()
def concat_all_gather(x: Tensor) -> Tensor:
    """Concatenate ``x`` from all ranks along dim 0, without gradient.

    Args:
        x: Tensor of shape (N, ...), the same shape on every rank.

    Returns:
        Tensor of shape (W * N, ...), rank ``r``'s rows at
        ``[r * N:(r + 1) * N]``.
    """
    world_size = get_world_size()
    if world_size == 1:
        return x.detach().clone()
    x = x.detach().contiguous()
    gathered = [torch.empty_like(x) for _ in range(world_size)]
    dist.all_gather(gathered, x)
    return torch.cat(gathered, dim=0)
