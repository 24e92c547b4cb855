import math

import numpy as np
import pytest
import torch
from mmpretrain.registry import MODELS

from pmsn_mm.models.priors import (BasePrior, PowerLawPrior, UniformPrior,
                                   validate_prior_values)


def test_uniform_prior_values():
    prior = MODELS.build(dict(type='UniformPrior'))
    assert isinstance(prior, UniformPrior)
    probs = prior(5)
    assert probs.dtype == torch.float32
    torch.testing.assert_close(probs, torch.full((5, ), 0.2))


def test_prior_dtype_argument():
    probs = UniformPrior()(3, torch.float64)
    assert probs.dtype == torch.float64
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-15)


def test_power_law_prior_hand_computed():
    prior = MODELS.build(dict(type='PowerLawPrior', tau=0.5))
    weights = [1.0, 1 / math.sqrt(2), 1 / math.sqrt(3), 0.5]
    expected = torch.tensor([w / sum(weights) for w in weights],
                            dtype=torch.float64)
    torch.testing.assert_close(
        prior(4, torch.float64), expected, rtol=0, atol=1e-15)
    # k = 1 is the most probable and probabilities decrease with k.
    assert torch.all(prior(4)[:-1] > prior(4)[1:])


def test_power_law_tau_zero_is_uniform():
    torch.testing.assert_close(PowerLawPrior(0.0)(7), UniformPrior()(7))


@pytest.mark.parametrize('tau', [-0.5, float('nan'), float('inf'), '0.5'])
def test_power_law_invalid_tau(tau):
    with pytest.raises(ValueError, match='tau must be a finite number >= 0'):
        PowerLawPrior(tau)


def test_power_law_underflowing_weights_raise():
    # 2 ** -2000 underflows to 0 in float64: reported, not clamped.
    with pytest.raises(ValueError, match='weights must be > 0.*infinite'):
        PowerLawPrior(2000.0)(3)


@pytest.mark.parametrize('num_prototypes', [0, -3, 2.5, True])
def test_invalid_num_prototypes(num_prototypes):
    with pytest.raises(ValueError, match='num_prototypes must be an int'):
        UniformPrior()(num_prototypes)


def test_base_prior_checks_length():

    class WrongLength(BasePrior):

        def weights(self, num_prototypes):
            return np.ones(num_prototypes + 1)

    with pytest.raises(ValueError, match='length 4.*num_prototypes=3'):
        WrongLength()(3)


def test_validate_prior_values_messages():
    with pytest.raises(ValueError, match='my setting must be finite'):
        validate_prior_values([1.0, float('nan')], 'my setting')
    with pytest.raises(ValueError, match='my setting must be finite'):
        validate_prior_values([1.0, float('inf')], 'my setting')
    with pytest.raises(ValueError, match=r'my setting must be >= 0.*\[1\]'):
        validate_prior_values([1.0, -1.0], 'my setting')
    with pytest.raises(ValueError, match='my setting must not be all zero'):
        validate_prior_values([0.0, 0.0], 'my setting')
    with pytest.raises(
            ValueError,
            match=r'my setting must be > 0.*\[0\]'
            r'.*KL\(p_mean \|\| prior\) infinite'):
        validate_prior_values([0.0, 1.0], 'my setting')
    with pytest.raises(ValueError, match='my setting must be a non-empty 1-D'):
        validate_prior_values([[1.0]], 'my setting')
    with pytest.raises(ValueError, match='my setting must be a non-empty 1-D'):
        validate_prior_values([], 'my setting')
    with pytest.raises(ValueError, match='my setting must be a 1-D sequence'):
        validate_prior_values(['a', 'b'], 'my setting')


def test_probs_cached_for_fixed_priors_and_sinkhorn_marginal():
    from pmsn_mm.models.priors import AdaptivePowerLawPrior
    power = PowerLawPrior(1.0)
    probs = power.probs(3, torch.device('cpu'), torch.float64)
    torch.testing.assert_close(
        probs, torch.tensor([6 / 11, 3 / 11, 2 / 11], dtype=torch.float64))
    assert power.probs(3, torch.device('cpu'), torch.float64) is probs
    assert power.probs(3).dtype == torch.float32
    assert power.sinkhorn_marginal(probs) is probs
    uniform = UniformPrior()
    assert uniform.sinkhorn_marginal(uniform.probs(4)) is None
    # a learned prior is recomputed from its state and always passed on
    learned = AdaptivePowerLawPrior(num_prototypes=3)
    flat = learned.probs(3, dtype=torch.float64)
    assert learned.sinkhorn_marginal(flat) is flat
    learned.tau.fill_(1.0)
    torch.testing.assert_close(learned.probs(3, dtype=torch.float64), probs)
    assert 'tau' in learned.state_dict() and not power.state_dict()
