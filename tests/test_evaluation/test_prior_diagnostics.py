"""Prior diagnostics of p̄: hand-computed values and validation."""
import math

import pytest
import torch

from pmsn_mm.evaluation.functional import (effective_num_clusters,
                                           prior_diagnostics,
                                           sorted_probabilities)

LN2, LN3 = math.log(2), math.log(3)


def test_uniform_prior_by_hand():
    stats = prior_diagnostics(
        torch.tensor([0.5, 0.25, 0.25]), torch.full((3, ), 1 / 3))
    assert stats['entropy'] == pytest.approx(1.5 * LN2, abs=1e-12)
    assert stats['effective_clusters'] == pytest.approx(2**1.5, abs=1e-12)
    # KL(p̄ ‖ u) = log K - H(p̄)
    assert stats['kl_forward'] == pytest.approx(LN3 - 1.5 * LN2, abs=1e-7)
    # KL(u ‖ p̄) = 1/3 (ln(2/3) + 2 ln(4/3)) = 5/3 ln 2 - ln 3
    assert stats['kl_reverse'] == pytest.approx(5 / 3 * LN2 - LN3, abs=1e-7)
    assert stats['prior_entropy'] == pytest.approx(LN3, abs=1e-7)
    assert stats['prior_effective_clusters'] == pytest.approx(3, abs=1e-6)


def test_non_uniform_prior_by_hand():
    stats = prior_diagnostics(
        torch.tensor([0.5, 0.5]), torch.tensor([0.75, 0.25]))
    assert stats['kl_forward'] == pytest.approx(0.5 * math.log(0.5 / 0.75) +
                                                0.5 * math.log(0.5 / 0.25))
    assert stats['kl_reverse'] == pytest.approx(0.75 * math.log(0.75 / 0.5) +
                                                0.25 * math.log(0.25 / 0.5))
    assert stats['kl_forward'] != pytest.approx(stats['kl_reverse'])
    assert stats['effective_clusters'] == pytest.approx(2.0)


def test_matching_prior_has_zero_kl():
    prior = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64)
    stats = prior_diagnostics(prior.clone(), prior)
    assert stats['kl_forward'] == pytest.approx(0, abs=1e-12)
    assert stats['kl_reverse'] == pytest.approx(0, abs=1e-12)
    assert stats['effective_clusters'] == pytest.approx(
        stats['prior_effective_clusters'])


def test_collapsed_mean_probs():
    stats = prior_diagnostics(torch.tensor([1.0, 0.0]), torch.tensor([.5, .5]))
    assert stats['entropy'] == 0
    assert stats['effective_clusters'] == 1
    assert stats['kl_forward'] == pytest.approx(LN2)
    # reverse KL is huge (an empty cluster) but finite
    assert math.isfinite(stats['kl_reverse']) and stats['kl_reverse'] > 100


def test_effective_num_clusters_batched():
    p = torch.tensor([[0.25] * 4, [1.0, 0, 0, 0]])
    assert torch.allclose(effective_num_clusters(p), torch.tensor([4.0, 1.0]))


def test_sorted_probabilities():
    p_sorted, q_sorted = sorted_probabilities(
        torch.tensor([0.1, 0.6, 0.3]), torch.tensor([0.2, 0.3, 0.5]))
    assert p_sorted.tolist() == pytest.approx([0.6, 0.3, 0.1])
    assert q_sorted.tolist() == pytest.approx([0.5, 0.3, 0.2])


@pytest.mark.parametrize('p, q, match', [
    (torch.rand(2, 3), torch.rand(3), 'mean_probs must be a non-empty 1-D'),
    (torch.rand(3), torch.rand(0), 'prior must be a non-empty 1-D'),
    (torch.tensor([0.5, -0.1, 0.6]), torch.rand(3), 'finite and non-neg'),
    (torch.tensor([0.5, float('nan')]), torch.rand(2), 'finite and non-neg'),
    (torch.rand(3), torch.rand(4), 'mean_probs has 3 entries but the prior'),
])
def test_validation_errors(p, q, match):
    with pytest.raises(ValueError, match=match):
        prior_diagnostics(p, q)


# ------------------------------------------- assignments of labelled samples
# rows are permutations of (.7, .2, .1): argmax prototypes [0, 0, 2, 1]
PROBS = torch.tensor([[.7, .2, .1], [.7, .2, .1], [.1, .2, .7],
                      [.1, .7, .2]])


def _entropy(p):
    return -sum(x * math.log(x) for x in p if x > 0)


def test_assignment_stats_by_hand():
    import numpy as np

    from pmsn_mm.evaluation.functional.prior_diagnostics import \
        assignment_stats
    labels = dict(digit=np.array([0, 0, 1, 1]),  # a function of the argmax
                  noise=np.array([0, 1, 0, 1]))  # half determined
    prior = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    stats = assignment_stats(PROBS, prior, labels)
    # NMI = 2 I / (H(argmax) + H(label)); digit: I = H(digit) = ln 2,
    # H(argmax) = 1.5 ln 2 -> 2 / 2.5; noise: only the two samples of
    # prototype 0 leave it open, I = ln 2 - 0.5 ln 2 -> 1 / 2.5
    assert stats['nmi_digit'] == pytest.approx(0.8)
    assert stats['nmi_noise'] == pytest.approx(0.4)
    assert stats['usage_sorted'] == pytest.approx([0.5, 0.25, 0.25])
    assert stats['num_used'] == 3
    mean = [0.4, 0.325, 0.275]  # column means of PROBS
    assert stats['mean_probs_sorted'] == pytest.approx(mean)
    assert stats['prior_sorted'] == pytest.approx([0.5, 0.3, 0.2])
    assert stats['mean_anchor_entropy'] == pytest.approx(
        _entropy([.7, .2, .1]))
    assert stats['mean_probs_entropy'] == pytest.approx(_entropy(mean))
    assert stats['kl_mean_probs_prior'] == pytest.approx(
        sum(p * math.log(p / q) for p, q in zip(mean, [.5, .3, .2])))
    assert stats['kl_usage_prior'] == pytest.approx(
        sum(p * math.log(p / q)
            for p, q in zip([.5, .25, .25], [.5, .3, .2])))


def test_assignment_stats_sorts_usage_against_the_sorted_prior():
    from pmsn_mm.evaluation.functional.prior_diagnostics import \
        assignment_stats

    # every sample on prototype 2, the prior's smallest entry
    probs = torch.tensor([[0.1, 0.1, 0.8]] * 3)
    stats = assignment_stats(probs, torch.tensor([0.6, 0.3, 0.1]))
    assert stats['usage_sorted'] == [1.0, 0.0, 0.0]
    assert stats['num_used'] == 1
    assert stats['kl_usage_prior'] == pytest.approx(math.log(1 / 0.6))
    assert not any(k.startswith('nmi_') for k in stats)


def test_assignment_stats_validation():
    import numpy as np

    from pmsn_mm.evaluation.functional.prior_diagnostics import \
        assignment_stats
    with pytest.raises(ValueError, match="label 'digit' has 3 entries"):
        assignment_stats(PROBS, torch.full((3, ), 1 / 3),
                         dict(digit=np.zeros(3, dtype=int)))
    with pytest.raises(ValueError, match='non-empty'):
        assignment_stats(torch.zeros(0, 3), torch.full((3, ), 1 / 3))
    with pytest.raises(ValueError, match='mean_probs has 3 entries'):
        assignment_stats(PROBS, torch.full((4, ), 1 / 4))


def test_collapse_indicator_by_hand():
    from pmsn_mm.evaluation.functional.prior_diagnostics import \
        collapse_indicator

    # normalised rows e1, e1, e2, e2: per-dimension values (1, 1, 0, 0),
    # unbiased std sqrt(1/3), times sqrt(D = 2)
    z = torch.tensor([[2., 0], [3, 0], [0, 1], [0, 5]])
    assert collapse_indicator(z) == pytest.approx(math.sqrt(2 / 3))
    assert collapse_indicator(torch.tensor([[1., 2]] * 5)) == 0
    with pytest.raises(ValueError, match='N >= 2'):
        collapse_indicator(torch.ones(1, 4))
