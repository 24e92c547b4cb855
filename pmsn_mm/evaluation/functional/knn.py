"""Cosine k-nearest neighbours of frozen features: the weighted kNN
classifier of the paper's kNN numbers and the neighbour agreement of Fig. 3.

The classifier is the last of the kNN benchmark's three files
(:mod:`pmsn_mm.evaluation.metrics.frozen_features` describes the path):
:class:`~pmsn_mm.evaluation.metrics.KNNAccuracy` calls
:func:`weighted_knn_scores` on the gathered memory and query features.
"""
from typing import Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ...utils.validation import check_int, check_positive


def cosine_topk(queries: Tensor,
                bank: Tensor,
                k: int,
                exclude: Optional[Tensor] = None,
                chunk_size: int = 1024) -> Tuple[Tensor, Tensor]:
    """The ``k`` most cosine-similar rows of ``bank`` for every query.

    Args:
        queries: Tensor of shape (M, D).
        bank: Tensor of shape (N, D), N >= k.
        k: Number of neighbours.
        exclude: Optional long tensor of shape (M,): a bank index each
            query may not return (itself, when the queries are bank rows).
        chunk_size: Queries per similarity block (memory bound).

    Returns:
        Similarities (M, k) (float32) and bank indices (M, k), most similar
        first.
    """
    bank = F.normalize(bank.float(), dim=1)
    queries = F.normalize(queries.float(), dim=1)
    sims, indices = [], []
    for start in range(0, len(queries), chunk_size):
        sim = queries[start:start + chunk_size] @ bank.T
        if exclude is not None:
            sim[torch.arange(len(sim)),
                exclude[start:start + chunk_size]] = -float('inf')
        top = sim.topk(k, dim=1)
        sims.append(top.values)
        indices.append(top.indices)
    if not sims:
        return torch.zeros(0, k), torch.zeros(0, k, dtype=torch.long)
    return torch.cat(sims), torch.cat(indices)


def weighted_knn_scores(train_feats: Tensor,
                        train_labels: Tensor,
                        test_feats: Tensor,
                        num_classes: int,
                        k: int = 20,
                        temperature: float = 0.07,
                        chunk_size: int = 1024) -> Tensor:
    """Class scores of a temperature-weighted cosine k-NN vote.

    Each test point votes with its ``k`` most cosine-similar training points,
    neighbour ``j`` adding ``exp(sim_j / temperature)`` to its class (the
    protocol of InstDisc/DINO/MSN's kNN evaluation).

    Args:
        train_feats: Tensor of shape (N, D).
        train_labels: Long tensor of shape (N,), values in [0, num_classes).
        test_feats: Tensor of shape (M, D).
        num_classes: Number of classes C.
        k: Number of neighbours, 1 <= k <= N (not clipped).
        temperature: Softmax temperature of the votes, > 0.
        chunk_size: Test points per similarity block (memory bound).

    Returns:
        Tensor of shape (M, C) with the summed vote weights.
    """
    check_int('k', k, 1, len(train_feats))  # at most the training features
    check_positive('temperature', temperature)
    top_sim, top_idx = cosine_topk(test_feats, train_feats, k,
                                   chunk_size=chunk_size)
    weights = (top_sim / temperature).exp()
    scores = torch.zeros(len(top_sim), num_classes, dtype=weights.dtype)
    return scores.scatter_add_(1, train_labels.long()[top_idx], weights)


def knn_top1(train_feats: Tensor,
             train_labels: Tensor,
             test_feats: Tensor,
             test_labels: Tensor,
             k: int = 20,
             temperature: float = 0.07) -> float:
    """Top-1 accuracy (in %) of :func:`weighted_knn_scores`.

    Args:
        train_feats: Tensor of shape (N, D).
        train_labels: Long tensor of shape (N,).
        test_feats: Tensor of shape (M, D).
        test_labels: Long tensor of shape (M,).
        k: Number of neighbours.
        temperature: Vote temperature.

    Returns:
        Accuracy in percent.
    """
    num_classes = int(max(train_labels.max(), test_labels.max())) + 1
    scores = weighted_knn_scores(train_feats, train_labels, test_feats,
                                 num_classes, k, temperature)
    pred = scores.argmax(dim=1)
    return float((pred == test_labels.long()).float().mean() * 100)


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
    """Agreement expected from random neighbours (no self):
    ``sum_c n_c (n_c - 1) / (N (N - 1))``.

    Args:
        labels: Int array of shape (N,), N >= 2.

    Returns:
        A float in [0, 1].
    """
    counts = np.bincount(np.asarray(labels)).astype(np.float64)
    num = counts.sum()
    return float((counts * (counts - 1)).sum() / (num * (num - 1)))
