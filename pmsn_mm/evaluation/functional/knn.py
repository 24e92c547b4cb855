"""Weighted k-nearest-neighbour classification on frozen features."""
import torch
import torch.nn.functional as F
from torch import Tensor


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
        k: Number of neighbours, clipped to N is *not* done: k must be <= N.
        temperature: Softmax temperature of the votes, > 0.
        chunk_size: Test points per similarity block (memory bound).

    Returns:
        Tensor of shape (M, C) with the summed vote weights.
    """
    if not 1 <= k <= len(train_feats):
        raise ValueError(f'k must be in [1, {len(train_feats)}] (the number '
                         f'of training features), got {k}.')
    if temperature <= 0:
        raise ValueError(f'temperature must be > 0, got {temperature}.')
    train = F.normalize(train_feats.float(), dim=1)
    test = F.normalize(test_feats.float(), dim=1)
    labels = train_labels.long()
    scores = []
    for start in range(0, len(test), chunk_size):
        sim = test[start:start + chunk_size] @ train.T
        top_sim, top_idx = sim.topk(k, dim=1)
        weights = (top_sim / temperature).exp()
        block = torch.zeros(len(sim), num_classes, dtype=weights.dtype)
        block.scatter_add_(1, labels[top_idx], weights)
        scores.append(block)
    return torch.cat(scores) if scores else torch.zeros(0, num_classes)


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
