"""Class-stratified mini-batch sampling (paper §4 and Appendix G).

Every *global* batch (per-GPU batch × world size) holds exactly ``K`` classes
drawn uniformly without replacement, and ``global_batch / K`` images of each,
drawn uniformly within the class. ``K = 960`` is the paper's
"class-balanced" setting, ``K = 2`` (MSN, VICReg, batch 1024) or ``K = 8``
(SimCLR, batch 4096) its "class-imbalanced" one.
"""
import math
from typing import Iterator, List, Optional, Tuple

import numpy as np
from mmengine.dist import get_dist_info, sync_random_seed
from mmpretrain.registry import DATA_SAMPLERS
from torch.utils.data import BatchSampler, Sampler

from ...utils.labels import get_dataset_labels
from ...utils.validation import check_int
from .utils import group_by_class, make_rng


def occurrence_rank(values: np.ndarray, num_values: int) -> np.ndarray:
    """How many times each element's value occurred earlier in ``values``.

    Args:
        values: Int array of shape (M,) with entries in ``[0, num_values)``.
        num_values: Number of distinct possible values.

    Returns:
        np.ndarray: Int64 array of shape (M,); e.g. ``[3, 1, 3, 3] -> [0, 0,
        1, 2]``.
    """
    order = np.argsort(values, kind='stable')
    starts = np.searchsorted(values[order], np.arange(num_values))
    ranks = np.empty(values.shape[0], dtype=np.int64)
    ranks[order] = np.arange(values.shape[0]) - starts[values[order]]
    return ranks


def stratified_epoch_indices(
        labels: np.ndarray,
        num_batches: int,
        global_batch: int,
        k: int,
        rng: np.random.Generator,
        replacement: bool = False,
        groups: Optional[Tuple[np.ndarray, ...]] = None) -> np.ndarray:
    """Draw one epoch of class-stratified global batches (fully vectorised).

    Each batch takes ``k`` classes uniformly without replacement and
    ``m = global_batch // k`` images of each. Without replacement every
    class is permuted once per epoch and its ``j``-th pick in the epoch takes
    the cyclic positions ``[j*m, j*m + m) mod n_c`` (no repeat within a
    batch; needs ``m <= n_c``); with replacement the ``m`` images are drawn
    i.i.d. Either way an image appears ``(k / C) * (m / n_c)`` times per
    batch in expectation (Appendix G). Positions inside each batch are then
    shuffled, so any contiguous slice (one rank's) is a random part of it.

    Args:
        labels: Int array of shape (N,), the class of every image.
        num_batches: Number of global batches ``T`` to draw.
        global_batch: Global batch size ``B``; must be divisible by ``k``.
        k: Number of classes per global batch, ``1 <= k <= C``.
        rng: Source of randomness.
        replacement: Sample within a class with replacement. Defaults to False.

    Returns:
        np.ndarray: Int64 dataset indices of shape (T, B).
    """
    _, counts, offsets, order = groups if groups is not None \
        else group_by_class(labels)
    num_classes = counts.shape[0]
    if not 1 <= k <= num_classes:
        raise ValueError(f'k must be in [1, {num_classes}] but is {k}.')
    if global_batch % k:
        raise ValueError(f'k={k} must divide global_batch={global_batch}.')
    per_class = global_batch // k
    if not replacement and counts.min() < per_class:
        raise ValueError(f'every class needs >= {per_class} images without '
                         f'replacement, the smallest has {counts.min()}.')

    # 1. K classes per batch, uniformly without replacement.
    if k == num_classes:
        chosen = np.broadcast_to(np.arange(num_classes), (num_batches, k))
    else:
        keys = rng.random((num_batches, num_classes))
        chosen = np.argpartition(keys, k - 1, axis=1)[:, :k]
    chosen = np.ascontiguousarray(chosen).ravel()  # (T * k,), batch-major
    sizes = counts[chosen][:, None]  # (T * k, 1)

    # 2. Positions inside each chosen class.
    if replacement:
        pool = order
        pos = np.minimum((rng.random(
            (chosen.shape[0], per_class)) * sizes).astype(np.int64), sizes - 1)
    else:
        class_of_slot = np.repeat(np.arange(num_classes), counts)
        pool = order[np.argsort(class_of_slot + rng.random(order.shape[0]))]
        start = occurrence_rank(chosen, num_classes) * per_class
        pos = (start[:, None] + np.arange(per_class)) % sizes
    images = pool[offsets[chosen][:, None] + pos].reshape(
        num_batches, global_batch)

    # 3. Shuffle the positions inside every global batch.
    shuffle = np.argsort(rng.random((num_batches, global_batch)), axis=1)
    return np.take_along_axis(images, shuffle, axis=1)


@DATA_SAMPLERS.register_module()
class ClassStratifiedBatchSampler(BatchSampler):
    """Every global batch holds ``classes_per_batch`` classes, equally often.

    The class-stratified sampler of the paper (§4 "Experimental setup",
    Appendix G), only as mmengine's ``batch_sampler`` (a ``sampler`` cannot
    see ``batch_size``; one in ``batch_sampler`` is refused)::

        train_dataloader = dict(
            batch_size=64,  # per GPU; 16 GPUs -> global batch 1024
            drop_last=False,  # torch refuses True with a batch_sampler
            sampler=dict(type='DefaultSampler', shuffle=True),
            batch_sampler=dict(type='ClassStratifiedBatchSampler',
                               classes_per_batch=2),
            ...)  # every batch is whole

    ``K = 960`` is "class-balanced", ``K = 2`` or ``8`` "class-imbalanced"
    (:func:`stratified_epoch_indices`). The sampler supplies the dataset,
    ``seed``, ``shuffle``, ``round_up`` and the epoch; draws come from
    ``seed + epoch`` (``seed`` alone when ``shuffle=False``); every rank
    takes its contiguous slice of the same global batches; an epoch has
    ``ceil(N / B)`` (``round_up``) or ``N // B`` whole batches.

    Args:
        sampler: The dataloader's sampler, whose ``dataset`` exposes class
            labels (``get_gt_labels()``, ``get_cat_ids(idx)``, a wrapper).
        batch_size: Per-GPU batch size (the dataloader's).
        classes_per_batch: ``K``, classes per global batch; must divide
            ``batch_size × world_size``.
        replacement: Sample within a class with replacement. Defaults to False.
    """

    def __init__(self,
                 sampler: Sampler,
                 batch_size: int,
                 classes_per_batch: int,
                 replacement: bool = False) -> None:
        if not hasattr(sampler, 'dataset'):
            raise ValueError(
                'ClassStratifiedBatchSampler needs a sampler with a dataset '
                f'(e.g. DefaultSampler), got {type(sampler).__name__}.')
        self.classes_per_batch = check_int(
            'ClassStratifiedBatchSampler classes_per_batch',
            classes_per_batch, 1)
        batch_size = check_int('ClassStratifiedBatchSampler batch_size',
                               batch_size, 1)
        super().__init__(sampler, batch_size, drop_last=False)
        self.replacement = bool(replacement)
        self.rank, self.world_size = get_dist_info()
        self.dataset = sampler.dataset
        self.shuffle = getattr(sampler, 'shuffle', True)
        self.round_up = getattr(sampler, 'round_up', True)
        seed = getattr(sampler, 'seed', None)
        self.seed = sync_random_seed() if seed is None else seed
        self.labels = get_dataset_labels(self.dataset)
        self._groups = group_by_class(self.labels)
        self.global_batch = self.batch_size * self.world_size
        self._validate()

    def _validate(self) -> None:
        """Check the settings against the dataset's class counts."""
        classes, counts, _, _ = self._groups
        k, gb = self.classes_per_batch, self.global_batch
        setting = (f'batch_size={self.batch_size} × world_size='
                   f'{self.world_size} = {gb}')
        if k > classes.shape[0]:
            raise ValueError(
                f'classes_per_batch={k} exceeds the number of classes in the '
                f'dataset ({classes.shape[0]}); lower classes_per_batch.')
        if gb % k:
            raise ValueError(
                f'classes_per_batch={k} must divide the global batch size '
                f'({setting}); change classes_per_batch or batch_size.')
        per_class = gb // k
        if not self.replacement and counts.min() < per_class:
            small = int(np.argmin(counts))
            raise ValueError(
                f'class {classes[small]} has {counts[small]} images but each '
                f'sampled class needs {per_class} per batch (global batch '
                f'{setting} / classes_per_batch={k}); raise '
                'classes_per_batch, lower batch_size, or set '
                'replacement=True.')
        if self.num_batches < 1:
            raise ValueError(
                f'the dataset has {len(self.labels)} images, fewer than one '
                f'global batch ({setting}) and round_up=False leaves no '
                'batch; set round_up=True or lower batch_size.')

    @property
    def epoch(self) -> int:
        """The sampler's epoch (0 if it has none)."""
        return getattr(self.sampler, 'epoch', 0)

    @property
    def num_batches(self) -> int:
        """Global batches (= iterations) per epoch."""
        n = len(self.labels)
        if self.round_up:
            return math.ceil(n / self.global_batch)
        return n // self.global_batch

    def epoch_batches(self) -> np.ndarray:
        """All global batches of the current epoch, (T, global_batch)."""
        rng = make_rng(self.seed + (self.epoch if self.shuffle else 0))
        return stratified_epoch_indices(self.labels, self.num_batches,
                                        self.global_batch,
                                        self.classes_per_batch, rng,
                                        self.replacement, self._groups)

    def rank_batches(self) -> np.ndarray:
        """This rank's slice of every global batch, (T, batch_size)."""
        lo = self.rank * self.batch_size
        return self.epoch_batches()[:, lo:lo + self.batch_size]

    def __iter__(self) -> Iterator[List[int]]:
        """Yield this rank's batches of the sampler's epoch."""
        return iter(self.rank_batches().tolist())

    def __len__(self) -> int:
        """Batches per rank and epoch."""
        return self.num_batches

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(classes_per_batch='
                f'{self.classes_per_batch}, batch_size={self.batch_size}, '
                f'world_size={self.world_size}, '
                f'replacement={self.replacement}, seed={self.seed})')


__all__ = ['ClassStratifiedBatchSampler', 'stratified_epoch_indices']
