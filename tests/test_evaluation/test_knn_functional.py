"""weighted_knn_scores / knn_top1 against a brute-force loop."""
import math

import pytest
import torch

from pmsn_mm.evaluation import knn_top1, weighted_knn_scores


def _brute_force(train, labels, test, num_classes, k, t):
    out = []
    for q in test:
        sims = []
        for x, y in zip(train, labels):
            cos = float(q @ x) / (float(q.norm()) * float(x.norm()))
            sims.append((cos, int(y)))
        sims.sort(key=lambda s: -s[0])
        votes = [0.0] * num_classes
        for cos, y in sims[:k]:
            votes[y] += math.exp(cos / t)
        out.append(votes)
    return torch.tensor(out)


def test_scores_match_brute_force():
    g = torch.Generator().manual_seed(0)
    train = torch.randn(60, 5, generator=g)
    labels = torch.randint(0, 4, (60, ), generator=g)
    test = torch.randn(13, 5, generator=g)
    scores = weighted_knn_scores(train, labels, test, 4, k=7,
                                 temperature=0.07, chunk_size=5)
    expected = _brute_force(train, labels, test, 4, 7, 0.07)
    assert torch.allclose(scores, expected.float(), rtol=1e-4)


def test_top1_on_separable_clusters_and_noise():
    g = torch.Generator().manual_seed(1)
    centers = torch.eye(3) * 10
    labels = torch.arange(3).repeat_interleave(20)
    train = centers[labels] + torch.randn(60, 3, generator=g)
    test = centers[labels] + torch.randn(60, 3, generator=g)
    assert knn_top1(train, labels, test, labels, k=5) == 100.0
    shuffled = labels[torch.randperm(60, generator=g)]
    assert knn_top1(train, shuffled, test, labels, k=5) < 60.0


@pytest.mark.parametrize('kwargs, match', [
    (dict(k=0), 'k must be'), (dict(k=11), 'k must be'),
    (dict(k=3, temperature=0.0), 'temperature'),
])
def test_bad_arguments(kwargs, match):
    x = torch.randn(10, 3)
    with pytest.raises(ValueError, match=match):
        weighted_knn_scores(x, torch.zeros(10, dtype=torch.long), x, 2,
                            **kwargs)
