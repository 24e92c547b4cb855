"""What the class-aware samplers share with ``DefaultSampler``."""
from typing import Optional, Sized

import numpy as np
from mmengine.dist import get_dist_info, sync_random_seed
from torch.utils.data import Sampler

from ...utils.labels import get_dataset_labels
from .utils import group_by_class, make_rng


class ClassAwareSampler(Sampler):
    """Base of the class-aware samplers.

    ``DefaultSampler``'s contract (draws of an epoch from ``seed +
    epoch``) plus the dataset's class labels, read once from the
    annotations (:func:`get_dataset_labels`) and grouped by class.

    Args:
        dataset: A dataset exposing class labels (``get_gt_labels()``,
            ``get_cat_ids(idx)`` or an mmengine/torch wrapper of one).
        shuffle: If False, every epoch repeats the draws of epoch 0.
        seed: Random seed, identical on all ranks; if None, a seed is drawn
            and synced with ``mmengine.dist.sync_random_seed()``.
        round_up: As in ``DefaultSampler`` (see each sampler).
    """

    def __init__(self,
                 dataset: Sized,
                 shuffle: bool = True,
                 seed: Optional[int] = None,
                 round_up: bool = True) -> None:
        self.rank, self.world_size = get_dist_info()
        self.dataset = dataset
        self.shuffle = shuffle
        self.round_up = round_up
        self.seed = sync_random_seed() if seed is None else seed
        self.epoch = 0
        self.labels = get_dataset_labels(dataset)
        self._groups = group_by_class(self.labels)

    def epoch_rng(self) -> np.random.Generator:
        """The generator of the current epoch's draws."""
        return make_rng(self.seed + (self.epoch if self.shuffle else 0))

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch; the indices are drawn from ``seed + epoch``.

        Args:
            epoch: Epoch number.
        """
        self.epoch = epoch
