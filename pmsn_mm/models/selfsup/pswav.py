"""PSwAV: SwAV whose Sinkhorn codes follow a cluster prior."""
import itertools
from typing import TYPE_CHECKING, Any, Dict, List, cast

import torch
import torch.nn.functional as F
from mmpretrain.models.selfsup import SwAV
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample
from torch import Tensor, nn

from .prototype_embed import PrototypeEmbedMixin

if TYPE_CHECKING:
    from ..losses import PSwAVLoss


@MODELS.register_module()
class PSwAV(PrototypeEmbedMixin, SwAV):
    """SwAV (mmpretrain's multi-crop step, ``SwAVNeck``, ``SwAVHook``) with
    :class:`~pmsn_mm.models.heads.PSwAVHead` (prototypes and prior) and
    :class:`~pmsn_mm.models.losses.PSwAVLoss`, so the codes satisfy
    Assran et al., ICLR 2023, arXiv:2210.07277, eq. (8) with
    ``P 1_N = N * prior`` instead of ``N / K`` (a uniform prior is SwAV).

    Unlike mmpretrain's ``SwAV``, crops are grouped by resolution from
    host-side shapes (no device read-back), and every stage embeds through
    :class:`~pmsn_mm.models.selfsup.PrototypeEmbedMixin`.

    Args:
        See mmpretrain's ``SwAV`` / ``BaseSelfSupervisor``.
    """

    def project(self, neck: nn.Module, feats: Tensor) -> Tensor:
        """``SwAVNeck`` pools inside ``forward``; its projection is applied
        to the pooled features.

        Args:
            neck: The ``SwAVNeck``.
            feats: Tensor of shape (B, C).

        Returns:
            Tensor of shape (B, D).
        """
        # ``SwAVNeck`` (mmpretrain: untyped)
        return cast(Any, neck).forward_projection(feats)

    def prototype_probabilities(self, z: Tensor) -> Tensor:
        """SwAV's predicted assignments ``softmax(z @ W.T / temperature)``
        (W the normalised prototypes, as in the loss).

        Args:
            z: Tensor of shape (B, D).

        Returns:
            Tensor of shape (B, K).
        """
        prototypes = F.normalize(self.head.prototypes, dim=1)
        return F.softmax(
            F.linear(z, prototypes) /
            cast('PSwAVLoss', self.head.loss_module).temperature,
            dim=1)

    def loss(self, inputs: List[Tensor], data_samples: List[DataSample],
             **kwargs) -> Dict[str, Tensor]:
        """SwAV's multi-crop forward, then the head's loss.

        Args:
            inputs: Crops (B, C, H, W), grouped by resolution (``num_crops``).
            data_samples: Unused (self-supervised).

        Returns:
            Losses (``loss_*``) and statistics of the head.
        """
        if not isinstance(inputs, list):
            raise TypeError('PSwAV.loss expects a list of crop batches, got '
                            f'{type(inputs).__name__}.')
        # multi-resolution forward: one backbone pass per run of crops of
        # the same size (host-side shapes, no device values)
        output, start = [], 0
        for _, group in itertools.groupby(inputs, key=lambda x: x.shape[-1]):
            end = start + len(list(group))
            output.append(self.backbone(torch.cat(inputs[start:end])))
            start = end
        return self.head.loss(self.neck(output))
