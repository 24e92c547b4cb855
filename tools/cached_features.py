"""The two pieces of a linear probe trained on cached frozen features.

:class:`CachedFeatures` serves in-memory features as mmpretrain samples and
:class:`CachedFeatureProbe` feeds them to the probe head of a linear-probe
model, so that an mmengine ``Runner`` trains and evaluates the probes as the
online run would (``run_cached_probe`` of ``tools/cached_probe.py``).
Both serve that tool only, so they live beside it.
Neither is built from a config: both wrap objects made at run time.
"""
from typing import TYPE_CHECKING, List, Optional, cast

from mmengine.model import BaseModel
from mmpretrain.structures import DataSample
from torch import Tensor
from torch.utils.data import Dataset

if TYPE_CHECKING:
    from ..models.heads import MultiLinearProbeHead


class CachedFeatures(Dataset):
    """In-memory features and labels served as mmpretrain samples.

    Args:
        features: Tensor of shape (N, D).
        labels: Tensor of shape (N,).
        metainfo: Metainfo of the original dataset (for the evaluator).
    """

    def __init__(self, features: Tensor, labels: Tensor,
                 metainfo: Optional[dict] = None) -> None:
        if len(features) != len(labels):
            raise ValueError(f'{len(features)} features but {len(labels)} '
                             'labels.')
        self.features = features
        self.labels = labels
        self.metainfo = dict(metainfo or {})

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, idx: int) -> dict:
        return dict(
            inputs=self.features[idx],
            data_samples=DataSample().set_gt_label(self.labels[idx]))


class CachedFeatureProbe(BaseModel):
    """The probes of a linear-probe model, fed cached features.

    Args:
        head: The ``MultiLinearProbeHead`` (shared with the full model).
    """

    def __init__(self, head: 'MultiLinearProbeHead') -> None:
        super().__init__()
        self.head = head

    def forward(self,
                inputs: Tensor,
                data_samples: Optional[List[DataSample]] = None,
                mode: str = 'tensor'):
        """mmengine's ``tensor`` / ``loss`` / ``predict`` modes.

        Args:
            inputs: Features of shape (B, D).
            data_samples: Data samples with ``gt_label``.
            mode: ``'tensor'``, ``'loss'`` or ``'predict'``.
        """
        feats = (inputs, )
        if mode == 'loss':
            # the samples are required in this mode
            return self.head.loss(feats, cast(List[DataSample], data_samples))
        if mode == 'predict':
            return self.head.predict(feats, data_samples)
        if mode == 'tensor':
            return self.head(feats)
        raise ValueError(f"mode must be 'tensor', 'loss' or 'predict', got "
                         f'{mode!r}.')
