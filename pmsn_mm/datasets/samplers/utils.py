"""Label extraction and small helpers shared by the class-aware samplers.

Labels are read from annotations only; a sample is never loaded
(``dataset[i]`` would decode an image).
"""
import math
from typing import Any, Tuple

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

    Looked up, in this order: the mmengine wrappers ``RepeatDataset``,
    ``ClassBalancedDataset``, (mmengine or torch) ``ConcatDataset``, torch
    ``Subset`` and the Runner's ``num_batch_per_epoch`` slice (recursively,
    vectorised over the wrapped datasets);
    ``dataset.get_gt_labels()`` (mmpretrain datasets, one call); and
    ``dataset.get_cat_ids(idx)`` for every index (mmengine datasets; a Python
    loop over the annotations, so slower, but no image is loaded).

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


def group_by_class(
    labels: np.ndarray
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group image indices by class.

    Args:
        labels: Int array of shape (N,), arbitrary label values.

    Returns:
        tuple: ``(classes, counts, offsets, order)``: the distinct labels
        (C,), the number of images per class (C,), the start of each class in
        ``order`` (C,), and the image indices sorted by class (N,), so that
        the images of class ``classes[c]`` are
        ``order[offsets[c]:offsets[c] + counts[c]]``.
    """
    classes, inverse, counts = np.unique(labels,
                                         return_inverse=True,
                                         return_counts=True)
    order = np.argsort(inverse, kind='stable')
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    return classes, counts.astype(np.int64), offsets, order


def check_positive_int(value: Any, name: str) -> int:
    """Return ``value`` if it is a positive int, else raise ``ValueError``.

    Args:
        value: The value to check.
        name: The argument name, used in the message.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f'{name} must be a positive integer but is '
                         f'{value!r}.')
    return int(value)


def check_finite_real(value: Any, name: str) -> float:
    """Return ``value`` as float if it is a finite real, else raise.

    Args:
        value: The value to check.
        name: The argument name, used in the message.
    """
    if isinstance(value, bool) or not isinstance(
            value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value):
        raise ValueError(f'{name} must be a finite real number but is '
                         f'{value!r}.')
    return float(value)


def make_rng(seed: int) -> np.random.Generator:
    """A numpy generator for an integer seed (negative seeds allowed).

    Args:
        seed: Any Python int; taken modulo 2**64.
    """
    return np.random.default_rng(int(seed) % 2**64)
