"""Class labels of a dataset, read from its annotations only.

Shared by the class-aware samplers, the low-shot subsets and ``ClassPrior``
(a neutral home: neither ``models`` nor ``datasets`` imports the other). A
sample is never loaded (``dataset[i]`` would decode an image).
"""
from typing import Any

import numpy as np
from mmengine.dataset import ClassBalancedDataset, RepeatDataset
from torch.utils.data import ConcatDataset, Subset


def _as_label_array(labels: Any, n: int, source: str) -> np.ndarray:
    """Check that ``labels`` is a 1-D integer array of length ``n``."""
    arr = np.asarray(labels)
    if arr.dtype == object or arr.ndim != 1:
        raise ValueError(
            f'{source} must give one integer class label per image (a 1-D '
            f'array), got an array of shape {arr.shape} and dtype '
            f'{arr.dtype}; multi-label datasets are not supported.')
    if arr.shape[0] != n:
        raise ValueError(
            f'{source} gave {arr.shape[0]} labels but the dataset has '
            f'{n} images.')
    if n and not np.issubdtype(arr.dtype, np.integer):
        if not (np.issubdtype(arr.dtype, np.floating)
                and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
            raise ValueError(
                f'{source} must give integer class labels, got dtype '
                f'{arr.dtype}.')
    return arr.astype(np.int64)


def get_dataset_labels(dataset: Any) -> np.ndarray:
    """Return the class label of every image of ``dataset``.

    Through mmengine/torch dataset wrappers (recursively), then
    ``get_gt_labels()`` (mmpretrain), then ``get_cat_ids(idx)`` per index
    (mmengine; slower, but no image is loaded).

    Args:
        dataset: The dataset. Must be ``Sized``.

    Returns:
        np.ndarray: Int64 array of shape (len(dataset),).

    Raises:
        ValueError: If the dataset exposes no single-label class annotation.
    """
    n = len(dataset)
    name = type(dataset).__name__
    if isinstance(dataset, RepeatDataset):
        inner = get_dataset_labels(dataset.dataset)
        return _as_label_array(np.tile(inner, dataset.times), n, name)
    if isinstance(dataset, ClassBalancedDataset):
        inner = get_dataset_labels(dataset.dataset)
        return _as_label_array(
            inner[np.asarray(dataset.repeat_indices, dtype=np.int64)], n, name)
    if isinstance(dataset, ConcatDataset):  # mmengine's subclasses torch's
        parts = [get_dataset_labels(d) for d in dataset.datasets]
        return _as_label_array(
            np.concatenate(parts) if parts else np.zeros(0, np.int64), n, name)
    if isinstance(dataset, Subset):
        inner = get_dataset_labels(dataset.dataset)
        return _as_label_array(
            inner[np.asarray(dataset.indices, dtype=np.int64)], n, name)

    if type(dataset).__name__ == '_SlicedDataset':
        # mmengine's Runner wraps the dataset in this private class when the
        # dataloader config sets ``num_batch_per_epoch``; it forwards
        # attributes (so ``get_gt_labels`` would give the full dataset's).
        inner = get_dataset_labels(dataset._dataset)
        return _as_label_array(inner[:n], n, name)

    if hasattr(dataset, 'get_gt_labels'):
        try:
            labels = dataset.get_gt_labels()
        except (KeyError, NotImplementedError, TypeError) as err:
            raise ValueError(
                f'{name}.get_gt_labels() failed ({err!r}); the class-aware '
                'samplers need a dataset with one class label per image '
                '(e.g. `gt_label` in every data_info).') from err
        return _as_label_array(labels, n, f'{name}.get_gt_labels()')
    if hasattr(dataset, 'get_cat_ids'):
        labels = np.empty(n, dtype=np.int64)
        for idx in range(n):
            try:
                cat_ids = list(dataset.get_cat_ids(idx))
            except (KeyError, NotImplementedError, TypeError) as err:
                raise ValueError(
                    f'{name}.get_cat_ids({idx}) failed ({err!r}); the '
                    'class-aware samplers need a dataset with one class '
                    'label per image.') from err
            if len(cat_ids) != 1:
                raise ValueError(
                    f'{name}.get_cat_ids({idx}) returned {cat_ids}; the '
                    'class-aware samplers need exactly one class label per '
                    'image.')
            labels[idx] = int(cat_ids[0])
        return labels
    raise ValueError(
        f'{name} exposes no class labels: the class-aware samplers need '
        '`get_gt_labels()` (mmpretrain datasets) or `get_cat_ids(idx)` '
        '(mmengine datasets), or one of the mmengine/torch wrappers around '
        'such a dataset. Use DefaultSampler for unlabelled data.')


def label_counts(dataset: Any, setting: str = 'dataset') -> np.ndarray:
    """Count the ground-truth labels of a dataset.

    Args:
        dataset: A labelled dataset (:func:`get_dataset_labels`); with
            ``CLASSES``, a class without samples counts 0.
        setting: Name in error messages, e.g. ``'ClassPrior dataset'``.

    Returns:
        np.ndarray of shape (num_classes,), int64.
    """
    try:
        labels = get_dataset_labels(dataset)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f'{setting} must have get_gt_labels() (an mmpretrain '
            'BaseDataset) or get_cat_ids(idx), one label per image, but '
            f'{type(dataset).__name__} has not: {err}') from err
    if labels.size == 0:
        raise ValueError(f'{setting} has no labels.')
    if labels.min() < 0:
        raise ValueError(
            f'{setting} labels must be integers >= 0, but got '
            f'dtype {labels.dtype} with minimum {labels.min()}.')
    classes = getattr(dataset, 'CLASSES', None)
    minlength = 0 if classes is None else len(classes)
    return np.bincount(labels, minlength=minlength)
