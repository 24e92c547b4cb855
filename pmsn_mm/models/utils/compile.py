"""A ``train_step`` that mmengine's ``compile=True`` can compile.

mmengine's ``Runner(compile=True)`` compiles the whole ``train_step``, but
Dynamo fails inside the optimizer's step (tracing AdamW's ``param_groups``;
docs/distributed.md). :func:`update_params_eagerly` is the parameter update
(backward, clipping, step, zero-grad) that PMSN's ``train_step`` runs eagerly;
without ``compile`` it is the same computation. MSN's patch-drop noise is drawn
eagerly in any case (:func:`~pmsn_mm.models.utils.random_keep_indices`).
"""
import torch
from mmengine.optim import OptimWrapper
from torch import Tensor


@torch.compiler.disable
def update_params_eagerly(optim_wrapper: OptimWrapper, loss: Tensor) -> None:
    """``optim_wrapper.update_params(loss)``, never traced by Dynamo."""
    optim_wrapper.update_params(loss)
