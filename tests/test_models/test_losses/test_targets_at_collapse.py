"""PMSN targets at the trivial solution ``p_i = prior`` for every anchor.

Why the toy study needs Sinkhorn towards the prior (docs/toy_prior_study.md):
with a skewed prior, MSN's sharpening alone pushes every target towards the
head prototype, so the cross-entropy fights the KL term on the mean and the
per-sample deviations that would break the symmetry are not amplified by
1 / T as they are with a uniform prior. Sinkhorn with the prior as column
marginal restores the uniform-prior behaviour exactly (to first order):
mean target = prior, deviations amplified by 1 / T.
"""
import pytest
import torch

from pmsn_mm.models.priors import PowerLawPrior, UniformPrior
from pmsn_mm.models.utils import distributed_sinkhorn, sharpen

K, B, T = 10, 256, 0.25


def _power_law(tau):
    ranks = torch.arange(1, K + 1, dtype=torch.float64)
    weights = ranks**(-tau)
    return weights / weights.sum()


def _deviations(eps, seed=0):
    """eps-small deviations with zero row sums and zero column means."""
    gen = torch.Generator().manual_seed(seed)
    d = torch.randn(B, K, generator=gen, dtype=torch.float64)
    d -= d.mean(dim=1, keepdim=True)
    d -= d.mean(dim=0, keepdim=True)
    return eps * d


def test_sharpening_a_power_law_gives_the_power_law_tau_over_t():
    # p_k ∝ k^-tau  =>  p_k^(1/T) ∝ k^-(tau/T): a tau 0.5 prior becomes a
    # tau 2 target, 1 / sum_k k^-2 = 0.6453 of the mass on one prototype
    prior = PowerLawPrior(K, tau=0.5).probs
    target = sharpen(prior[None], T)[0]
    torch.testing.assert_close(target, _power_law(2.0), rtol=0, atol=1e-12)
    assert abs(float(target[0]) - 0.64526) < 1e-5
    assert abs(float(prior[0]) - 0.19916) < 1e-5


@pytest.mark.parametrize('prior_type', ['uniform', 'power-law'])
def test_sinkhorn_towards_the_prior_at_collapse(prior_type):
    """Mean target = prior and deviations amplified by exactly 1 / T."""
    prior = (UniformPrior(K).probs if prior_type == 'uniform' else
             PowerLawPrior(K, tau=0.5).probs)
    eps = 1e-6
    delta = _deviations(eps)
    probs = prior[None] + delta
    targets = distributed_sinkhorn(
        sharpen(probs, T), num_iters=200,
        col_marginal=None if prior_type == 'uniform' else prior)
    torch.testing.assert_close(
        targets.mean(dim=0), prior, rtol=0, atol=1e-12)
    # first-order solution: t_i = prior + delta_i / T
    residual = (targets - prior[None] - delta / T).norm() / (delta / T).norm()
    assert residual < 1e-4


def test_sharpening_alone_pushes_every_target_to_the_head_prototype():
    """Without Sinkhorn, a power-law prior's collapsed targets are not the
    prior: the mean is the tau 2 power law, not the tau 0.5 prior."""
    prior = PowerLawPrior(K, tau=0.5).probs
    delta = _deviations(1e-6)
    targets = sharpen(prior[None] + delta, T)
    push = targets.mean(dim=0) - prior
    torch.testing.assert_close(
        push, _power_law(2.0) - prior, rtol=0, atol=1e-9)
    assert float(push.abs().sum() / 2) > 0.44  # total variation
    # and the differential gain is not 1 / T: (p/pi) ratios shrink on the
    # tail prototypes, where the sharpened target has almost no mass
    dev = targets - targets.mean(dim=0, keepdim=True)
    gain = float((dev * delta).sum() / (delta * delta).sum())
    assert gain < 0.9 / T
