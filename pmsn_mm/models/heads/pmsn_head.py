"""Prototype head of (P)MSN."""
import math
from typing import Dict, Optional, Union

import torch
from mmengine.model import BaseModule
from mmpretrain.registry import MODELS
from torch import Tensor, nn


@MODELS.register_module()
class PMSNHead(BaseModule):
    """Learnable prototypes plus the PMSN loss (paper eq. (msn_prior)).

    The prototypes are initialised uniformly in ``±sqrt(1 / D)`` (official
    MSN) from the global torch RNG in ``__init__``; :meth:`init_weights`
    keeps them (it only runs ``init_cfg``, e.g. ``Pretrained``).

    Prototypes should get no weight decay, as in MSN::

        optim_wrapper = dict(
            ...,
            paramwise_cfg=dict(
                custom_keys={'prototypes': dict(decay_mult=0.0)}))

    Args:
        num_prototypes: Number of prototypes K, >= 1.
        in_channels: Embedding dim D, >= 1. Defaults to 256.
        loss: Config of the loss (or a built module) called as
            ``loss(anchors, targets, prototypes)``. Defaults to
            ``dict(type='PMSNLoss')``.
        init_cfg: mmengine init config. Defaults to None.
    """

    def __init__(self,
                 num_prototypes: int,
                 in_channels: int = 256,
                 loss: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[dict] = None) -> None:
        super().__init__(init_cfg=init_cfg)
        for name, value in (('num_prototypes', num_prototypes), ('in_channels',
                                                                 in_channels)):
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 1:
                raise ValueError(f'{name} must be an int >= 1 but is '
                                 f'{value!r}.')
        if loss is None:
            loss = dict(type='PMSNLoss')
        self.num_prototypes = num_prototypes
        self.in_channels = in_channels
        self.loss_module = MODELS.build(loss) if isinstance(loss,
                                                            dict) else loss
        self.prototypes = nn.Parameter(
            torch.empty(num_prototypes, in_channels))
        bound = math.sqrt(1.0 / in_channels)
        nn.init.uniform_(self.prototypes, -bound, bound)

    def loss(self, anchors: Tensor, targets: Tensor) -> Dict[str, Tensor]:
        """Compute the loss against the (learnable) prototypes.

        Args:
            anchors: Tensor of shape (B * V, D), view-major.
            targets: Tensor of shape (B, D).

        Returns:
            The loss module's dict (``loss_ce``, ``loss_prior``, stats...).
        """
        return self.loss_module(anchors, targets, self.prototypes)

    def extra_repr(self) -> str:
        return (f'num_prototypes={self.num_prototypes}, '
                f'in_channels={self.in_channels}')
