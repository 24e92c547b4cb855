"""Differentiable collectives for losses whose statistics span ranks.

``mmengine.dist``'s collectives have no gradient; these two add the backward
passes the global-batch losses need (the identity with world size 1).

Kept instead of ``torch.distributed.nn.functional.all_reduce``/``all_gather``:
deprecated (a FutureWarning every call in torch 2.15), they raise under
``torch.compile``.
"""
import torch
import torch.distributed as dist
from mmengine.dist import get_world_size
from torch import Tensor


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
    """Average ``x`` over all ranks, differentiably (PMSN's p̄).

    Forward: ``y = (1 / W) * sum_r x_r`` (the same ``y`` on every rank).

    Backward: the all-reduce mean of ``g_s = dL_s / dy``, exact under DDP
    (``dJ / dx_r = (1 / W) mean_s(g_s)`` for ``J = (1 / W) sum_s L_s``, DDP
    supplying the ``1 / W``; official MSN's ``AllReduce`` passes ``g_r``).
    Every rank contributes a tensor of the same shape.

    Args:
        x: Tensor of any shape, e.g. the per-rank mean probabilities (K,).

    Returns:
        Tensor of the same shape: the mean of ``x`` over ranks.
    """
    if get_world_size() == 1:
        return x
    return _AllReduceMean.apply(x)


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
    """Concatenate ``x`` from all ranks along dim 0, differentiably (VICReg's
    global statistics; ``FullGatherLayer`` of facebookresearch/vicreg).

    Forward: ``y = cat_r(x_r)``, rank ``r``'s rows at
    ``[r * N:(r + 1) * N]`` (the same ``y`` on every rank).

    Backward: rank ``r`` receives ``sum_s dL_s / dy[rows of r]``; with
    DDP's averaging that is the exact gradient of ``J = (1 / W) sum_s L_s``
    (as the official VICReg).

    Args:
        x: Tensor of shape (N, ...), the same shape on every rank.

    Returns:
        Tensor of shape (W * N, ...).
    """
    if get_world_size() == 1:
        return x
    return _AllGatherSumGrad.apply(x)
