"""Cosine k-nearest neighbours of frozen features: the weighted kNN
classifier of the paper's kNN numbers (the last of the kNN benchmark's
three files, :mod:`pmsn_mm.evaluation.metrics.frozen_features`).
"""
from typing import Optional, Tuple

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
        exclude: Optional long tensor (M,): a bank index each query may not
            return (itself).
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

    Neighbour ``j`` adds ``exp(sim_j / temperature)`` to its class
    (InstDisc/DINO/MSN's kNN protocol).

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
