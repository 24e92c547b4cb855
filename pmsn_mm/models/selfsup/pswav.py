"""PSwAV: SwAV whose Sinkhorn codes follow a cluster prior."""
from typing import Dict, List

from mmpretrain.models.selfsup import SwAV
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample
from torch import Tensor


@MODELS.register_module()
class PSwAV(SwAV):
    """SwAV (mmpretrain's multi-crop step, ``SwAVNeck``, ``SwAVHead``,
    ``SwAVHook``) with :class:`~pmsn_mm.models.losses.PSwAVLoss` as the
    head's loss, so the codes satisfy paper eq. (swav) with
    ``P 1_N = N * prior`` instead of ``N / K`` (a uniform prior is SwAV).

    The only change to mmpretrain's ``SwAV``: the head may return a dict of
    losses and statistics (``PSwAVLoss``), which is passed on as the loss
    dict; a plain tensor (``SwAVLoss``) becomes ``dict(loss=...)`` as in
    SwAV.

    Args:
        See mmpretrain's ``SwAV`` / ``BaseSelfSupervisor``.
    """

    def loss(self, inputs: List[Tensor], data_samples: List[DataSample],
             **kwargs) -> Dict[str, Tensor]:
        """SwAV's multi-crop forward, then the head's loss.

        Args:
            inputs: Crops, grouped by resolution (``num_crops`` order), each
                of shape (B, C, H, W).
            data_samples: Unused (self-supervised).

        Returns:
            Losses (``loss_*``) and statistics of the head's loss.
        """
        out = super().loss(inputs, data_samples, **kwargs)['loss']
        return out if isinstance(out, dict) else dict(loss=out)
