"""mmpretrain's ``LARS`` without host syncs (registered in its place)."""
from typing import Callable, List, Optional

import torch
from mmpretrain.engine.optimizers import LARS as _MMPretrainLARS
from mmpretrain.registry import OPTIMIZERS
from torch import Tensor


@OPTIMIZERS.register_module(name='LARS', force=True)
class LARS(_MMPretrainLARS):
    """LARS (`arXiv:1708.03888 <https://arxiv.org/abs/1708.03888>`_) with
    the update of mmpretrain's ``LARS``, its trust ratio kept on the device.

    mmpretrain's ``step`` reads the weight and gradient norm of every
    parameter to the host (``.item()``, two host syncs per parameter: 332
    per step for a ResNet-50 with its neck and prototypes), only to choose
    between ``eta * |w| / (|g| + wd * |w| + eps)`` and 1. Here the norms of
    a parameter group come from one foreach call and the choice is a
    ``torch.where``; the update is otherwise the same (the trust ratio is
    computed in the parameters' dtype instead of Python floats). Registered
    as ``'LARS'`` when :mod:`pmsn_mm` is imported, so configs that name
    ``LARS`` (SimCLR, VICReg, PSwAV) get it.

    Args:
        See mmpretrain's ``LARS``.
    """

    @torch.no_grad()
    def step(self, closure: Optional[Callable] = None) -> Optional[Tensor]:
        """Perform a single optimization step.

        Args:
            closure: A closure that re-evaluates the model and returns the
                loss.

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
            grads = [p.grad for p in params]
            if group.get('lars_exclude', False):
                scales: List = [lr] * len(params)
            else:
                w_norms = torch._foreach_norm(params)
                g_norms = torch._foreach_norm(grads)
                scales = []
                for w, g in zip(w_norms, g_norms):
                    trust = eta * w / (g + weight_decay * w + self.eps)
                    scales.append(torch.where((w != 0) & (g != 0), trust,
                                              torch.ones_like(trust)) * lr)
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
