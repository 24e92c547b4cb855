"""``SyncFreeSimCLR``: mmpretrain's ``SimCLR`` loss without host syncs."""
from typing import Dict, List, Tuple

import torch
from mmpretrain.models.heads import ContrastiveHead
from mmpretrain.models.selfsup import SimCLR
from mmpretrain.models.selfsup.simclr import GatherLayer
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample
from torch import Tensor


def positive_negative_index(batch_size: int,
                            device: torch.device) -> Tuple[Tensor, Tensor]:
    """Column indices of the positive and the negatives of every row of
    SimCLR's (2N, 2N) similarity matrix (sample ``k``: rows ``2k``, ``2k+1``).

    Args:
        batch_size: N, the (global) number of samples.
        device: Where the indices go.

    Returns:
        ``(positive, negatives)``: Long tensors (2N, 1) and (2N, 2N - 2)
        (every other column, in order), from ``arange``: no host sync.
    """
    rows = torch.arange(2 * batch_size, device=device)
    positive = torch.bitwise_xor(rows, 1).unsqueeze(1)
    cols = torch.arange(2 * batch_size - 2, device=device).unsqueeze(0)
    first = (rows - rows % 2).unsqueeze(1)  # 2k: the sample's first row
    negatives = cols + 2 * (cols >= first).long()
    return positive, negatives


@MODELS.register_module()
class SyncFreeSimCLR(SimCLR):
    """SimCLR (`arXiv:2002.05709 <https://arxiv.org/abs/2002.05709>`_) with
    mmpretrain's loss, its positives and negatives gathered by index.

    mmpretrain's ``torch.masked_select`` costs two host syncs per step;
    ``gather`` with :func:`positive_negative_index` picks the same entries.

    Args:
        See mmpretrain's ``SimCLR`` / ``BaseSelfSupervisor``.
    """

    def loss(self, inputs: List[Tensor], data_samples: List[DataSample],
             **kwargs) -> Dict[str, Tensor]:
        """The SimCLR (NT-Xent) loss of two views per sample.

        Args:
            inputs: Two tensors of shape (B, C, H, W), the views.
            data_samples: Unused (self-supervised).

        Returns:
            ``dict(loss=...)``.
        """
        if not isinstance(inputs, list):
            raise TypeError('SyncFreeSimCLR.loss expects a list of two view '
                            f'batches, got {type(inputs).__name__}.')
        views = torch.stack(inputs, 1)
        views = views.reshape((views.size(0) * 2, views.size(2),
                               views.size(3), views.size(4)))
        z = self.neck(self.backbone(views))[0]  # (2n, d)
        z = z / (torch.norm(z, p=2, dim=1, keepdim=True) + 1e-10)
        z = torch.cat(GatherLayer.apply(z), dim=0)  # (2N, d)
        s = torch.matmul(z, z.permute(1, 0))  # (2N, 2N)
        positive, negatives = positive_negative_index(z.size(0) // 2,
                                                      s.device)
        loss = self._head_loss(s.gather(1, positive), s.gather(1, negatives))
        return dict(loss=loss)

    def _head_loss(self, pos: Tensor, neg: Tensor) -> Tensor:
        """``ContrastiveHead.loss`` of ``pos`` (2N, 1) and ``neg`` (2N, 2N -
        2) with its all-zero labels made on the device (mmpretrain uploads
        them: a blocking copy per step); any other head's own ``loss``."""
        if not isinstance(self.head, ContrastiveHead):
            return self.head.loss(pos, neg)
        logits = torch.cat((pos, neg), dim=1) / self.head.temperature
        labels = torch.zeros(pos.size(0), dtype=torch.long, device=pos.device)
        return self.head.loss_module(logits, labels)
