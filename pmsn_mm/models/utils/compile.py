"""A ``train_step`` that mmengine's ``compile=True`` can compile.

mmengine's ``Runner(compile=True)`` wraps the model's whole ``train_step`` in
``torch.compile``: preprocessing, forward, loss, backward and the optimizer
step. Dynamo traces the backbone and losses, but fails inside the
optimizer's step (tracing AdamW's ``param_groups``; docs/distributed.md,
torch.compile). :func:`update_params_eagerly` is the parameter update
(backward, clipping, optimizer step, zero-grad) that PMSN's ``train_step``
runs eagerly; without ``compile`` it is the same computation.

The views of every resolution (e.g. MSN's 224 and 96 px) pass the backbone
inside the one compiled step, so the graphs have static shapes and are
compiled once. Options go to ``torch.compile`` as they are
(``compile=dict(mode='max-autotune')``, ``compile=dict(dynamic=False)`` to
refuse symbolic shapes); MSN's patch-drop noise is drawn eagerly in any case
(:func:`~pmsn_mm.models.utils.random_keep_indices`).
"""
import torch
from mmengine.optim import OptimWrapper
from torch import Tensor


@torch.compiler.disable
def update_params_eagerly(optim_wrapper: OptimWrapper, loss: Tensor) -> None:
    """``optim_wrapper.update_params(loss)``, never traced by Dynamo."""
    optim_wrapper.update_params(loss)
