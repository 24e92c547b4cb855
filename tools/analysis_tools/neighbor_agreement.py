"""Cosine nearest neighbours of every sample and how often they share its
label (paper Fig. 3), for ``nearest_neighbors.py`` beside it."""
from typing import Optional, Sequence, Union

import numpy as np
import torch
from torch import Tensor

from pmsn_mm.evaluation.functional.knn import cosine_topk
from pmsn_mm.utils.validation import check_int


def cosine_knn(feats: Tensor,
               k: int,
               queries: Optional[Union[Sequence[int], Tensor]] = None,
               exclude_self: bool = True,
               chunk_size: int = 1024) -> Tensor:
    """Indices of the k most cosine-similar samples of each query.

    Args:
        feats: Tensor of shape (N, D), the memory bank (and the queries).
        k: Number of neighbours.
        queries: Indices of the queries in ``feats``; default all.
        exclude_self: Never return a query as its own neighbour.
        chunk_size: Queries per similarity block.

    Returns:
        Long tensor of shape (Q, k), most similar first.
    """
    num = len(feats)
    check_int('k', k, 1, num - int(exclude_self))
    queries = torch.arange(num) if queries is None else torch.as_tensor(
        queries, dtype=torch.long)
    return cosine_topk(feats[queries], feats, k,
                       queries if exclude_self else None, chunk_size)[1]


def neighbor_agreement(neighbors: Tensor,
                       labels: np.ndarray,
                       queries: Optional[Union[Sequence[int],
                                               np.ndarray]] = None) -> float:
    """Fraction of (query, neighbour) pairs that share the label.

    Args:
        neighbors: Long tensor of shape (Q, k), from :func:`cosine_knn`.
        labels: Int array of shape (N,).
        queries: Indices of the Q queries; default ``0..Q-1``.

    Returns:
        A float in [0, 1].
    """
    labels = np.asarray(labels)
    nbr = np.asarray(neighbors)
    queries = np.arange(len(nbr)) if queries is None else np.asarray(queries)
    return float((labels[nbr] == labels[queries][:, None]).mean())


def chance_agreement(labels: np.ndarray) -> float:
    """Agreement of random neighbours: ``sum_c n_c (n_c - 1) / (N (N - 1))``.

    Args:
        labels: Int array of shape (N,), N >= 2.

    Returns:
        A float in [0, 1].
    """
    counts = np.bincount(np.asarray(labels)).astype(np.float64)
    num = counts.sum()
    return float((counts * (counts - 1)).sum() / (num * (num - 1)))
