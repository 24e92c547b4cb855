"""``SyncFreeLARS``: mmpretrain's ``LARS`` update without host syncs."""
from typing import Callable, List, Optional, cast

import torch
from mmpretrain.engine.optimizers import LARS
from mmpretrain.registry import OPTIMIZERS
from torch import Tensor


@OPTIMIZERS.register_module()
class SyncFreeLARS(LARS):
    """LARS (`arXiv:1708.03888 <https://arxiv.org/abs/1708.03888>`_) with
    the update of mmpretrain's ``LARS``, its trust ratio kept on the device.

    mmpretrain's ``step`` reads two norms per parameter to the host only to
    choose between the trust ratio and 1; here one foreach call and a
    ``torch.where`` in float64 (as its Python floats): the same update.

    Args:
        params: See mmpretrain's ``LARS`` (as are the other arguments).
    """

    @torch.no_grad()
    def step(self, closure: Optional[Callable] = None) -> Optional[Tensor]:
        """Perform a single optimization step.

        Args:
            closure: A closure that re-evaluates the model, returning the loss.

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            weight_decay = group['weight_decay']
            momentum = group['momentum']
            dampening = group['dampening']
            eta = group['eta']
            nesterov = group['nesterov']
            lr = group['lr']
            params: List[Tensor] = [
                p for p in group['params'] if p.grad is not None
            ]
            if not params:
                continue
            grads = cast(List[Tensor], [p.grad for p in params])
            if group.get('lars_exclude', False):
                scales: List = [lr] * len(params)
            else:
                scales = [
                    _trust_ratio(w, g, eta, weight_decay, self.eps) * lr
                    for w, g in zip(torch._foreach_norm(params),
                                    torch._foreach_norm(grads))
                ]
            for p, d_p, scale in zip(params, grads, scales):
                d_p = d_p.add(p, alpha=weight_decay).mul(scale)
                if momentum != 0:
                    param_state = self.state[p]
                    if 'momentum_buffer' not in param_state:
                        buf = param_state['momentum_buffer'] = torch.clone(
                            d_p).detach()
                    else:
                        buf = param_state['momentum_buffer']
                        buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
                    d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
                p.sub_(d_p)
        return loss


def _trust_ratio(w_norm: Tensor, g_norm: Tensor, eta: float,
                 weight_decay: float, eps: float) -> Tensor:
    """``eta * |w| / (|g| + wd * |w| + eps)``, or 1 where a norm is 0, as a
    0-dim device tensor (float64 where the device has it, as mmpretrain's
    Python floats)."""
    if w_norm.device.type != 'mps':
        w_norm, g_norm = w_norm.double(), g_norm.double()
    trust = eta * w_norm / (g_norm + weight_decay * w_norm + eps)
    return torch.where((w_norm != 0) & (g_norm != 0), trust,
                       torch.ones_like(trust))
