"""Prototype head of PSwAV: prototypes, the cluster prior and SwAV's loss."""
from typing import Dict, Optional, Union

import torch
import torch.nn.functional as F
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ..priors import BasePrior
from .base_prototype_head import BasePrototypeHead


@MODELS.register_module()
class PSwAVHead(BasePrototypeHead):
    """SwAV's head with the prototypes and the cluster prior it owns (Assran et
    al., ICLR 2023, arXiv:2210.07277, eq. (8) with ``P 1_N = N * prior``).

    Unlike mmpretrain's ``SwAVHead``, the head owns the prototypes (K, D),
    L2-normalised before every step, and calls the stateless
    :class:`~pmsn_mm.models.losses.PSwAVLoss`; SwAVHook keeps working.

    Args:
        num_prototypes: Number of prototypes K, >= 1. Defaults to 3000; None: K
            from the prior (see :class:`BasePrototypeHead`).
        in_channels: Embedding dim D (``SwAVNeck``'s). Defaults to 128.
        prior: Prior config or ``BasePrior``. Defaults to ``UniformPrior``.
        loss: Loss config or module. Defaults to ``dict(type='PSwAVLoss')``.
        init_cfg: mmengine init config. Defaults to None.
    """

    default_loss = dict(type='PSwAVLoss')

    def __init__(self,
                 num_prototypes: Optional[int] = 3000,
                 in_channels: int = 128,
                 prior: Optional[Union[dict, BasePrior]] = None,
                 loss: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[dict] = None) -> None:
        super().__init__(num_prototypes, in_channels, prior, loss, init_cfg)

    @torch.no_grad()
    def normalize_prototypes(self) -> None:
        """L2-normalise the prototypes in place (SwAV, before every step)."""
        self.prototypes.copy_(F.normalize(self.prototypes.data.clone(),
                                          dim=1))

    def loss(self, x: Tensor) -> Dict[str, Tensor]:
        """The PSwAV loss of crop-major embeddings.

        Args:
            x: Tensor of shape (sum(num_crops) * B, D), from ``SwAVNeck``.

        Returns:
            ``loss_swav``, the loss's statistics and the learned prior's.
        """
        self.normalize_prototypes()
        losses, stats = self.loss_module(
            x,
            self.prototypes,
            self.prior.probs,
            sinkhorn_marginal=self.prior.sinkhorn_marginal(),
            return_usage=self.learns_prior_now)
        return self.finish_step(losses, stats, losses['loss_swav'].dtype)
