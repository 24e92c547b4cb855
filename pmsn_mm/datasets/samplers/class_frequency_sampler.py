"""Class-frequency sampling, e.g. inverse square-root frequency sampling.

Appendix "Alternatives to feature priors ...: data sampling": draw a class
``k`` with probability proportional to ``n_k ** power``, then an image
uniformly within it.
"""
import math
from typing import Iterator, Optional, Sized, Tuple

import numpy as np
from mmpretrain.registry import DATA_SAMPLERS

from ...utils.validation import check_number
from .class_aware_sampler import ClassAwareSampler
from .utils import group_by_class


def class_frequency_probs(counts: np.ndarray, power: float) -> np.ndarray:
    """Class probabilities ``n_k ** power / sum_j n_j ** power``.

    Computed in log space, so large ``|power|`` does not overflow.

    Args:
        counts: Positive int array of shape (C,), images per class.
        power: Finite exponent.

    Returns:
        np.ndarray: Float64 array of shape (C,) summing to 1.
    """
    logits = power * np.log(counts.astype(np.float64))
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def frequency_epoch_indices(
        labels: np.ndarray,
        num_indices: int,
        power: float,
        rng: np.random.Generator,
        groups: Optional[Tuple[np.ndarray, ...]] = None) -> np.ndarray:
    """Draw ``num_indices`` i.i.d. images by class-frequency sampling.

    Each index: class ``k`` with probability :func:`class_frequency_probs`,
    then an image uniformly within it (``power=1``: uniform over images,
    ``0``: over classes).

    Kept instead of ``torch.utils.data.WeightedRandomSampler``: its weights
    overflow for large ``|power|``, it refuses over 2**24 images and is not
    rank-sliced.

    Args:
        labels: Int array of shape (N,), the class of every image.
        num_indices: Number of indices to draw.
        power: Finite exponent on the class sizes.
        rng: Source of randomness.
        groups: Optional cached ``group_by_class(labels)``.

    Returns:
        np.ndarray: Int64 dataset indices of shape (num_indices,).
    """
    _, counts, offsets, order = groups if groups is not None \
        else group_by_class(labels)
    probs = class_frequency_probs(counts, power)
    classes = rng.choice(counts.shape[0], size=num_indices, p=probs)
    sizes = counts[classes]
    pos = np.minimum((rng.random(num_indices) * sizes).astype(np.int64),
                     sizes - 1)
    return order[offsets[classes] + pos]


@DATA_SAMPLERS.register_module()
class ClassFrequencySampler(ClassAwareSampler):
    """Sample a class with probability ∝ ``n_k ** power``, then an image.

    The paper's class probability ``sqrt(D_k) / D`` (appendix
    "Alternatives to feature priors ...: data sampling") does not sum to 1,
    so here ``p_k = n_k ** power / sum_j n_j ** power`` (``power=0.5``: per
    image ``∝ 1 / sqrt(n_k)``). All ranks draw the same i.i.d. stream from
    ``seed + epoch``; rank ``r`` keeps ``stream[r::world_size]``. Config:
    ``sampler=dict(type='ClassFrequencySampler', power=0.5)``.

    Args:
        dataset: A dataset exposing class labels (``get_gt_labels()``,
            ``get_cat_ids(idx)`` or an mmengine/torch wrapper of one).
        shuffle: If False, every epoch repeats epoch 0. Defaults to True.
        seed: Random seed, identical on all ranks; if None, a seed is drawn
            and synced with ``mmengine.dist.sync_random_seed()``.
        round_up: As in ``DefaultSampler``. Defaults to True.
        power: Exponent on the class sizes, finite. Defaults to 0.5.
    """

    def __init__(self,
                 dataset: Sized,
                 shuffle: bool = True,
                 seed: Optional[int] = None,
                 round_up: bool = True,
                 *,
                 power: float = 0.5) -> None:
        self.power = check_number('ClassFrequencySampler power', power)
        super().__init__(dataset, shuffle, seed, round_up)
        if self.labels.shape[0] == 0:
            raise ValueError('the dataset is empty; ClassFrequencySampler '
                             'needs at least one labelled image.')

        n = self.labels.shape[0]
        if round_up:
            self.num_samples = math.ceil(n / self.world_size)
            self.total_size = self.num_samples * self.world_size
        else:
            self.num_samples = math.ceil((n - self.rank) / self.world_size)
            self.total_size = n

    @property
    def class_probs(self) -> np.ndarray:
        """Probability of each class (in sorted label order), shape (C,)."""
        return class_frequency_probs(self._groups[1], self.power)

    def __iter__(self) -> Iterator[int]:
        """Yield this rank's slice ``stream[rank::world_size]``."""
        stream = frequency_epoch_indices(self.labels, self.total_size,
                                         self.power, self.epoch_rng(),
                                         self._groups)
        return iter(stream[self.rank::self.world_size].tolist())

    def __len__(self) -> int:
        """Indices per rank and epoch (as ``DefaultSampler``)."""
        return self.num_samples

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(power={self.power}, '
                f'world_size={self.world_size}, seed={self.seed})')


__all__ = [
    'ClassFrequencySampler', 'class_frequency_probs', 'frequency_epoch_indices'
]
