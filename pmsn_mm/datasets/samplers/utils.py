"""Helpers shared by the class-aware samplers: images grouped by class
(:func:`group_by_class`) and a seeded numpy generator (:func:`make_rng`).
"""
from typing import Tuple

import numpy as np


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


def make_rng(seed: int) -> np.random.Generator:
    """A numpy generator for an integer seed (negative seeds allowed).

    Args:
        seed: Any Python int; taken modulo 2**64.
    """
    return np.random.default_rng(int(seed) % 2**64)
