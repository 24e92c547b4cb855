"""Class-frequency cluster prior from label counts."""
from typing import Optional, Union

import numpy as np
from mmpretrain.registry import DATASETS, MODELS

from ...datasets.samplers.utils import get_dataset_labels
from .base_prior import ArrayLike, BasePrior, check_length, \
    validate_prior_values


def label_counts(dataset: object) -> np.ndarray:
    """Count the ground-truth labels of a dataset.

    Args:
        dataset: A labelled dataset, read as the class-aware samplers read
            it (:func:`~pmsn_mm.datasets.samplers.get_dataset_labels`:
            ``get_gt_labels()``, ``get_cat_ids(idx)`` or mmengine/torch
            wrappers of such datasets). If it has ``CLASSES`` (not None),
            the counts have ``len(CLASSES)`` entries, so a class without
            samples shows up as a zero count.

    Returns:
        np.ndarray of shape (num_classes,), int64.
    """
    try:
        labels = get_dataset_labels(dataset)
    except (TypeError, ValueError) as err:
        raise ValueError(
            'ClassPrior dataset must have get_gt_labels() (an mmpretrain '
            'BaseDataset) or get_cat_ids(idx), one label per image, but '
            f'{type(dataset).__name__} has not: {err}') from err
    if labels.size == 0:
        raise ValueError('ClassPrior dataset has no labels.')
    if labels.min() < 0:
        raise ValueError(
            'ClassPrior dataset labels must be integers >= 0, but got '
            f'dtype {labels.dtype} with minimum {labels.min()}.')
    classes = getattr(dataset, 'CLASSES', None)
    minlength = 0 if classes is None else len(classes)
    return np.bincount(labels, minlength=minlength)


@MODELS.register_module()
class ClassPrior(BasePrior):
    """Prior proportional to class counts, ``p_k = n_k / sum_j n_j``.

    Give exactly one of ``counts`` and ``dataset``. The number of classes
    must equal the number of prototypes, and every class must occur (a zero
    entry makes KL(p_mean || prior) infinite).

    Args:
        counts: Per-class counts or weights, shape (K,).
        dataset: A training dataset config (built with mmpretrain's
            ``DATASETS``) or instance with ``get_gt_labels()``; the counts are
            the bincount of its labels. Built once, here.
    """

    def __init__(self,
                 counts: Optional[ArrayLike] = None,
                 dataset: Optional[Union[dict, object]] = None) -> None:
        super().__init__()
        if (counts is None) == (dataset is None):
            given = 'both' if counts is not None else 'neither'
            raise ValueError('ClassPrior needs exactly one of counts and '
                             f'dataset, but got {given}.')
        if dataset is not None:
            if isinstance(dataset, dict):
                dataset = DATASETS.build(dataset)
            counts = label_counts(dataset)
            setting = 'ClassPrior dataset class counts'
        else:
            setting = 'ClassPrior counts'
        self.setting = setting
        self.counts = validate_prior_values(counts, setting)

    def weights(self, num_prototypes: int) -> np.ndarray:
        """Return the counts, shape (K,).

        Args:
            num_prototypes: The number of prototypes K; must equal the
                number of classes.
        """
        check_length(self.counts, num_prototypes, self.setting)
        return self.counts

    def extra_repr(self) -> str:
        return f'num_classes={self.counts.shape[0]}'
