"""Param groups of the trainable parameters only, without one warning per
frozen parameter."""
from typing import List, Optional, Union

import torch.nn as nn
from mmengine.logging import print_log
from mmengine.optim import OptimWrapper
from mmpretrain.registry import OPTIM_WRAPPER_CONSTRUCTORS

from .coalesced_constructor import CoalescedOptimWrapperConstructor


@OPTIM_WRAPPER_CONSTRUCTORS.register_module()
class SkipFrozenOptimWrapperConstructor(CoalescedOptimWrapperConstructor):
    """:class:`CoalescedOptimWrapperConstructor` (mmengine's default
    constructor with coalesced param groups) that leaves out whole frozen
    submodules up front.

    With a ``paramwise_cfg``, mmengine's ``add_params`` warns once per
    frozen parameter (hundreds for a ViT-B EMA target); a wholly frozen
    submodule gets one logged line instead. Trainable parameters go through
    ``add_params`` as before, in the same order, with the same settings.

    Args:
        optim_wrapper_cfg: The optimizer-wrapper config.
        paramwise_cfg: Parameter-wise options. Defaults to None.
    """

    def __init__(self,
                 optim_wrapper_cfg: dict,
                 paramwise_cfg: Optional[dict] = None) -> None:
        super().__init__(optim_wrapper_cfg, paramwise_cfg)
        self.skipped: List[str] = []

    def __call__(self, model: nn.Module) -> OptimWrapper:
        """Build the optimizer wrapper of ``model``.

        Args:
            model: The model (or a wrapper with ``.module``).

        Returns:
            The optimizer wrapper.
        """
        self.skipped = []
        return super().__call__(model)

    def add_params(self,
                   params: List[dict],
                   module: nn.Module,
                   prefix: str = '',
                   is_dcn_module: Optional[Union[int, float]] = None) -> None:
        """mmengine's ``add_params``, except for a submodule whose
        parameters are all frozen (``requires_grad=False``): it adds
        nothing there and logs one line.

        Args:
            params: The param groups, extended in place.
            module: The module whose parameters are added.
            prefix: The module's name in the model. Defaults to ``''``.
            is_dcn_module: See mmengine. Defaults to None.
        """
        frozen = [p for p in module.parameters() if not p.requires_grad]
        if frozen and len(frozen) == sum(1 for _ in module.parameters()):
            self.skipped.append(prefix)
            print_log(
                f'{prefix or type(module).__name__}: {len(frozen)} frozen '
                'parameters (requires_grad=False) left out of the optimizer',
                logger='current')
            return
        super().add_params(params, module, prefix, is_dcn_module)
