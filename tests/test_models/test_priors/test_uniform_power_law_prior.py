import math

import numpy as np
import pytest
import torch
from mmpretrain.registry import MODELS

from pmsn_mm.models.priors import (AdaptivePowerLawPrior, BasePrior,
                                   PowerLawPrior, UniformPrior,
                                   validate_prior_values)


def test_uniform_prior_values():
    prior = MODELS.build(
        dict(type='UniformPrior'), default_args=dict(num_prototypes=5))
    assert isinstance(prior, UniformPrior)
    assert prior.num_prototypes == 5
    # the probabilities are a float64 buffer, normalised once
    assert prior.probs.dtype == torch.float64
    torch.testing.assert_close(
        prior.probs, torch.full((5, ), 0.2, dtype=torch.float64))
    assert prior.is_uniform


def test_probs_are_normalised_in_float64():
    probs = UniformPrior(3).probs
    assert probs.dtype == torch.float64
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-15)


def test_power_law_prior_hand_computed():
    prior = MODELS.build(
        dict(type='PowerLawPrior', tau=0.5),
        default_args=dict(num_prototypes=4))
    weights = [1.0, 1 / math.sqrt(2), 1 / math.sqrt(3), 0.5]
    expected = torch.tensor([w / sum(weights) for w in weights],
                            dtype=torch.float64)
    torch.testing.assert_close(prior.probs, expected, rtol=0, atol=1e-15)
    # k = 1 is the most probable and probabilities decrease with k.
    assert torch.all(prior.probs[:-1] > prior.probs[1:])
    assert not prior.is_uniform


def test_power_law_tau_zero_is_uniform():
    power = PowerLawPrior(7, 0.0)
    torch.testing.assert_close(power.probs, UniformPrior(7).probs)
    # all entries equal: Sinkhorn runs the official uniform arithmetic
    assert power.is_uniform and power.sinkhorn_marginal() is None


@pytest.mark.parametrize('tau', [-0.5, float('nan'), float('inf'), '0.5'])
def test_power_law_invalid_tau(tau):
    with pytest.raises(
            ValueError, match=r'PowerLawPrior tau must be in \[0, inf\) '
            r'but is'):
        PowerLawPrior(4, tau)


def test_power_law_invalid_tau_message():
    with pytest.raises(
            ValueError,
            match=r'^PowerLawPrior tau must be in \[0, inf\) but is -1\.$'):
        PowerLawPrior(4, -1)


def test_power_law_underflowing_weights_raise():
    # 2 ** -2000 underflows to 0 in float64: reported, not clamped.
    with pytest.raises(
            ValueError,
            match=r'PowerLawPrior must be > 0.*\[1, 2\].*infinite'):
        PowerLawPrior(3, 2000.0)


@pytest.mark.parametrize('prior_type', [UniformPrior, PowerLawPrior])
@pytest.mark.parametrize('num_prototypes', [0, -3, 2.5, True])
def test_invalid_num_prototypes(prior_type, num_prototypes):
    args = (num_prototypes, ) if prior_type is UniformPrior else (
        num_prototypes, 0.5)
    with pytest.raises(
            ValueError,
            match=rf'{prior_type.__name__} num_prototypes must be an int '
            r'>= 1 but is'):
        prior_type(*args)


def test_base_prior_checks_length():
    with pytest.raises(
            ValueError,
            match='my weights has length 4, but must have length '
            'num_prototypes=3'):
        BasePrior(3, np.ones(4), 'my weights')


def test_base_prior_validates_weights():
    with pytest.raises(ValueError, match=r'my weights must be > 0.*\[1\]'):
        BasePrior(2, [1.0, 0.0], 'my weights')
    with pytest.raises(
            ValueError, match='BasePrior num_prototypes must be an int >= 1'):
        BasePrior(0, [1.0], 'my weights')


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


def test_probs_are_state_and_sinkhorn_marginal():
    power = PowerLawPrior(3, 1.0)
    probs = power.probs
    torch.testing.assert_close(
        probs, torch.tensor([6 / 11, 3 / 11, 2 / 11], dtype=torch.float64))
    # one buffer, built once, moved with the model but not checkpointed
    assert power.probs is probs
    assert dict(power.named_buffers())['probs'] is probs
    assert not power.state_dict()
    assert power.sinkhorn_marginal() is probs
    uniform = UniformPrior(4)
    assert uniform.is_uniform and uniform.sinkhorn_marginal() is None
    # a learned prior is never treated as uniform, even when it is flat
    learned = AdaptivePowerLawPrior(num_prototypes=3)
    torch.testing.assert_close(learned.probs, UniformPrior(3).probs)
    assert not learned.is_uniform
    assert learned.sinkhorn_marginal() is learned.probs
    # its probs follow its (checkpointed) tau
    state = learned.state_dict()
    assert 'tau' in state and 'probs' not in state
    state['tau'] = torch.tensor(1.0, dtype=torch.float64)
    learned.load_state_dict(state)
    torch.testing.assert_close(learned.probs, probs, rtol=0, atol=1e-15)
    assert learned.sinkhorn_marginal() is learned.probs


def test_prior_probs_move_with_the_module():
    prior = PowerLawPrior(4, 0.5)
    expected = prior.probs.clone()
    moved = prior.to(torch.float32)
    assert moved.probs.dtype == torch.float32
    torch.testing.assert_close(moved.probs, expected.float())
