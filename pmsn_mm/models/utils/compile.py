"""A ``train_step`` that mmengine's ``compile=True`` can compile.

mmengine's ``Runner(compile=True)`` wraps the model's whole ``train_step`` in
``torch.compile``: preprocessing, forward, loss, backward and the optimizer
step. Dynamo traces the backbone and losses, but fails inside the
optimizer's step (torch 2.14: ``'UserDefinedDictVariable' object has no
attribute 'items'`` while tracing AdamW's ``param_groups``). The step below is
mmengine's ``BaseModel.train_step`` with the parameter update (backward,
clipping, optimizer step, zero-grad) run eagerly; without ``compile`` it is
the same computation.

The views of every resolution (e.g. MSN's 224 and 96 px) pass the backbone
inside the one compiled step, so the graphs have static shapes and are
compiled once. Options go to ``torch.compile`` as they are
(``compile=dict(mode='max-autotune')``, ``compile=dict(dynamic=False)`` to
refuse symbolic shapes); MSN's patch-drop noise is drawn eagerly in any case
(:func:`~pmsn_mm.models.utils.random_keep_indices`).
"""
from typing import Dict, Union

import torch
from mmengine.optim import OptimWrapper
from torch import Tensor


@torch.compiler.disable
def update_params_eagerly(optim_wrapper: OptimWrapper, loss: Tensor) -> None:
    """``optim_wrapper.update_params(loss)``, never traced by Dynamo."""
    optim_wrapper.update_params(loss)


class EagerUpdateTrainStepMixin:
    """mmengine's ``train_step`` whose parameter update is not compiled.

    Mix in before ``BaseModel`` (e.g. ``class PMSN(EagerUpdateTrainStepMixin,
    ..., BaseSelfSupervisor)``).
    """

    def train_step(self, data: Union[dict, tuple, list],
                   optim_wrapper: OptimWrapper) -> Dict[str, Tensor]:
        """Preprocess, forward, loss (compilable), then update eagerly.

        Args:
            data: A batch from the dataloader.
            optim_wrapper: The wrapper that updates the parameters.

        Returns:
            The log variables of ``parse_losses``.
        """
        with optim_wrapper.optim_context(self):
            data = self.data_preprocessor(data, True)
            losses = self._run_forward(data, mode='loss')
        parsed_losses, log_vars = self.parse_losses(losses)
        update_params_eagerly(optim_wrapper, parsed_losses)
        return log_vars
