import io
import math

import numpy as np
import pytest
import torch
from mmpretrain.registry import MODELS

import pmsn_mm.models.priors.adaptive_power_law as adaptive_module
from pmsn_mm.models.heads import build_prior
from pmsn_mm.models.priors import (AdaptivePowerLawPrior, PowerLawPrior,
                                   UniformPrior, fit_power_law_exponent)


def _power_law(num_protos, tau):
    w = torch.arange(1, num_protos + 1, dtype=torch.float64)**-tau
    return w / w.sum()


def _drawn_usage(num_protos, tau, batch, steps, seed=0):
    """Per-step usage of ``batch`` samples drawn from a power law over the
    clusters, the clusters held by randomly permuted prototypes."""
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num_protos, generator=gen)
    probs = _power_law(num_protos, tau)
    for _ in range(steps):
        idx = torch.multinomial(probs, batch, replacement=True, generator=gen)
        yield torch.bincount(
            perm[idx], minlength=num_protos).double() / batch


# ------------------------------------------------------------------ the fit
@pytest.mark.parametrize('tau', [0.0, 0.25, 0.5, 1.7])
def test_fit_recovers_exact_power_law(tau):
    fit, valid = fit_power_law_exponent(3.0 * _power_law(12, tau))
    assert bool(valid)
    assert fit.item() == pytest.approx(tau, abs=1e-12)


def test_fit_equals_numpy_polyfit_and_skips_zero_ranks():
    rng = np.random.default_rng(0)
    usage = np.sort(rng.random(9))[::-1].copy()
    usage[-2:] = 0.0  # unused prototypes: no logarithm, left out
    slope = np.polyfit(np.log(np.arange(1, 8)), np.log(usage[:7]), 1)[0]
    fit, valid = fit_power_law_exponent(torch.from_numpy(usage))
    assert bool(valid)
    assert fit.item() == pytest.approx(-slope, abs=1e-12)


def test_fit_needs_two_positive_ranks():
    fit, valid = fit_power_law_exponent(torch.tensor([1.0, 0.0, 0.0]))
    assert not bool(valid) and math.isnan(fit.item())


# ------------------------------------------------ the prior, learning online
@pytest.mark.parametrize('num_protos, tau, batch', [(10, 0.5, 128),
                                                    (10, 0.5, 1024),
                                                    (100, 0.8, 1024),
                                                    (10, 1.2, 256)])
def test_fitted_tau_within_0_05_of_the_drawn_power_law(num_protos, tau, batch):
    prior = MODELS.build(
        dict(type='AdaptivePowerLawPrior', num_prototypes=num_protos,
             tau_max=2.0))
    for usage in _drawn_usage(num_protos, tau, batch, steps=800):
        prior.update_usage(usage)
    assert abs(prior.tau.item() - tau) < 0.05
    assert prior.num_updates.item() == 800
    # the prior is the power law with the fitted tau, by prototype index
    torch.testing.assert_close(
        prior.probs,
        PowerLawPrior(num_protos, prior.tau.item()).probs,
        rtol=0, atol=1e-15)


def test_sort_before_ema_is_unbiased_only_with_large_batches():
    def fit(batch):
        prior = AdaptivePowerLawPrior(10, sort_before_ema=True)
        for usage in _drawn_usage(10, 0.5, batch, steps=800):
            prior.update_usage(usage)
        return prior.tau.item()

    assert abs(fit(4096) - 0.5) < 0.05
    # 32 samples a step: sorting the noisy counts steepens the fit
    assert fit(32) > 0.6


def test_ema_closed_form_and_first_step():
    prior = AdaptivePowerLawPrior(4, tau_init=0.3, momentum=0.9)
    torch.testing.assert_close(prior.probs,
                               _power_law(4, 0.3), rtol=0, atol=1e-15)
    probs, probs_before = prior.probs, prior.probs.clone()
    u1 = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    u2 = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64)
    prior.update_usage(u1)
    prior.update_usage(u2)
    expected = 0.9 * 0.1 * u1 + 0.1 * u2
    torch.testing.assert_close(prior.usage_ema, expected, rtol=0, atol=1e-15)
    slope = np.polyfit(np.log([1, 2, 3, 4]),
                       np.log(np.sort(expected.numpy())[::-1]), 1)[0]
    assert prior.tau_fit.item() == pytest.approx(-slope, abs=1e-12)
    # probs is recomputed from the new tau; the tensor handed out before
    # the update is not changed (a loss may have saved it for backward)
    assert torch.equal(probs, probs_before)
    assert 'probs' in dict(prior.named_buffers())
    assert 'probs' not in prior.state_dict()
    torch.testing.assert_close(prior.probs,
                               _power_law(4, prior.tau.item()), rtol=0,
                               atol=1e-15)
    assert prior.statistics() == dict(
        prior_tau=prior.tau, prior_tau_fit=prior.tau_fit)


def test_warmup_updates_are_only_counted():
    prior = AdaptivePowerLawPrior(5, tau_init=0.25, momentum=0.0,
                                  warmup_updates=2)
    for _ in range(2):
        prior.update_usage(_power_law(5, 1.7))
        assert prior.tau.item() == 0.25
        assert prior.usage_ema.abs().sum().item() == 0.0
    assert prior.num_updates.item() == 2
    prior.update_usage(_power_law(5, 0.6))
    assert prior.num_updates.item() == 3
    assert prior.tau.item() == pytest.approx(0.6, abs=1e-12)


def test_unusable_usage_keeps_tau():
    prior = AdaptivePowerLawPrior(3, tau_init=0.4)
    prior.update_usage(torch.tensor([1.0, 0.0, 0.0]))
    assert prior.tau.item() == 0.4 and prior.tau_fit.item() == 0.4
    assert prior.num_updates.item() == 1


def test_bounds_are_applied_and_logged(monkeypatch):
    logged = []
    monkeypatch.setattr(adaptive_module, 'print_log',
                        lambda msg, **kw: logged.append(msg))
    prior = AdaptivePowerLawPrior(6, tau_min=0.1, tau_max=1.0, tau_init=0.5,
                                  momentum=0.0)
    prior.update_usage(_power_law(6, 1.5))
    assert prior.tau.item() == 1.0
    assert prior.tau_fit.item() == pytest.approx(1.5, abs=1e-12)
    assert len(logged) == 1 and 'fitted tau 1.5000 is outside' in logged[0]
    assert '[0.1, 1.0]; using tau = 1.0000' in logged[0]
    prior.update_usage(_power_law(6, 1.6))  # still outside: no new message
    assert len(logged) == 1
    prior.update_usage(torch.full((6, ), 1 / 6, dtype=torch.float64))
    assert prior.tau.item() == 0.1
    assert prior.tau_fit.item() == pytest.approx(0.0, abs=1e-12)
    assert len(logged) == 1  # outside on the other side, still bounded
    prior.update_usage(_power_law(6, 0.7))
    assert prior.tau.item() == pytest.approx(0.7, abs=1e-12)
    assert len(logged) == 2 and 'back inside' in logged[1]


def test_state_survives_save_and_resume():
    """Checkpoint after 30 steps, load into a fresh prior (torch.load with
    weights_only, as mmengine's resume), continue: identical to one run."""
    usages = list(_drawn_usage(8, 0.6, 64, steps=60, seed=1))
    straight = AdaptivePowerLawPrior(8, momentum=0.95)
    first = AdaptivePowerLawPrior(8, momentum=0.95)
    for u in usages[:30]:
        straight.update_usage(u)
        first.update_usage(u)
    buf = io.BytesIO()
    torch.save(dict(state_dict=first.state_dict()), buf)
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)['state_dict']
    assert set(saved) == {'tau', 'tau_fit', 'usage_ema', 'num_updates'}
    resumed = AdaptivePowerLawPrior(8, momentum=0.95)
    assert resumed.tau.item() == 0.0
    resumed.load_state_dict(saved)
    assert resumed.tau.item() == first.tau.item() != 0.0
    # probs is not saved: it is recomputed from the restored tau
    assert torch.equal(resumed.probs, first.probs)
    assert not torch.equal(resumed.probs, _power_law(8, 0.0))
    for u in usages[30:]:
        straight.update_usage(u)
        resumed.update_usage(u)
    for name, value in straight.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], value), name
    assert torch.equal(resumed.probs, straight.probs)
    assert resumed.num_updates.item() == 60


def test_probs_buffer_dtype_and_sinkhorn_marginal():
    prior = AdaptivePowerLawPrior(5, tau_init=0.5)
    assert prior.probs.dtype == torch.float64
    assert prior.probs.device.type == 'cpu'
    torch.testing.assert_close(prior.probs, _power_law(5, 0.5), rtol=0,
                               atol=1e-15)
    # a learned prior is always passed to Sinkhorn, even when flat
    assert not prior.is_uniform
    assert prior.sinkhorn_marginal() is prior.probs
    flat = AdaptivePowerLawPrior(5)
    torch.testing.assert_close(flat.probs, UniformPrior(5).probs)
    assert not flat.is_uniform and flat.sinkhorn_marginal() is flat.probs


def test_fixed_priors_do_not_learn():
    assert not UniformPrior.learns_from_usage
    assert AdaptivePowerLawPrior.learns_from_usage
    assert not PowerLawPrior.learns_from_usage
    assert UniformPrior(3).statistics() == {}
    with pytest.raises(NotImplementedError, match='UniformPrior is a fixed'):
        UniformPrior(3).update_usage(torch.ones(3))


# --------------------------------------------------------------- validation
@pytest.mark.parametrize('kwargs, match', [
    (dict(num_prototypes=1), 'num_prototypes must be an int >= 2 but is 1'),
    (dict(num_prototypes=4.0), 'num_prototypes must be an int >= 2'),
    (dict(num_prototypes=True), 'num_prototypes must be an int >= 2'),
    (dict(tau_max=float('inf')), r'tau_max must be in \(0, inf\) but is '
     'inf'),
    # tau_max must exceed tau_min
    (dict(tau_min=0.5, tau_max=0.2), r'tau_max must be in \(0.5, inf\) but '
     'is 0.2'),
    (dict(tau_init=float('nan')), r'tau_init must be in \[0, 1\] but is '
     'nan'),
    (dict(momentum='0.9'), r"momentum must be in \[0, 1\) but is '0.9'"),
    (dict(tau_min=-0.1), r'tau_min must be in \[0, inf\) but is -0.1'),
    (dict(tau_min=1.0, tau_max=1.0), r'tau_max must be in \(1, inf\) but '
     r'is 1.0'),
    (dict(tau_min=2.0, tau_max=1.0), r'tau_max must be in \(2, inf\) but '
     r'is 1.0'),
    # tau_init must lie in [tau_min, tau_max]
    (dict(tau_init=1.5), r'tau_init must be in \[0, 1\] but is 1.5'),
    (dict(tau_min=0.2, tau_max=0.8), r'tau_init must be in \[0.2, 0.8\] but '
     'is 0.0'),
    (dict(momentum=1.0), r'momentum must be in \[0, 1\) but is 1.0'),
    (dict(momentum=-0.1), r'momentum must be in \[0, 1\)'),
    (dict(warmup_updates=-1), 'warmup_updates must be an int >= 0 but is '
     '-1'),
    (dict(warmup_updates=2.0), 'warmup_updates must be an int >= 0'),
])
def test_invalid_settings(kwargs, match):
    kwargs = dict(dict(num_prototypes=4), **kwargs)
    with pytest.raises(ValueError, match='AdaptivePowerLawPrior ' + match):
        AdaptivePowerLawPrior(**kwargs)


def test_wrong_number_of_prototypes():
    prior = AdaptivePowerLawPrior(4)
    # a head with another K refuses the built prior
    with pytest.raises(ValueError, match='AdaptivePowerLawPrior has '
                       'num_prototypes=4 but the head has num_prototypes=5'):
        build_prior(prior, 5)
    assert build_prior(prior, 4) is prior
    with pytest.raises(ValueError, match=r'usage must have shape \(K,\) with '
                       r'K = num_prototypes = 4, but has shape \(5,\)'):
        prior.update_usage(torch.ones(5))


@pytest.mark.parametrize('bad', [-0.1, float('nan'), float('inf')])
def test_invalid_usage(bad):
    prior = AdaptivePowerLawPrior(3)
    with pytest.raises(ValueError, match='usage must be finite and >= 0'):
        prior.update_usage(torch.tensor([0.5, 0.5, bad]))
    assert prior.num_updates.item() == 0  # nothing was updated


def test_training_step_update_makes_no_host_sync():
    """check=False (the head's call in a training step): the same update,
    all on the device; an unusable usage is ignored."""
    from tests._profiling.op_counter import OpCounter, assert_host_syncs
    checked = AdaptivePowerLawPrior(6, momentum=0.5, warmup_updates=1)
    unchecked = AdaptivePowerLawPrior(6, momentum=0.5, warmup_updates=1)
    for tau in (0.3, 0.9, 1.2):
        checked.update_usage(_power_law(6, tau))
        with OpCounter() as counter:
            unchecked.update_usage(_power_law(6, tau), check=False)
        assert_host_syncs(counter, what=f'update_usage(check=False), {tau=}')
    for name in ('tau', 'tau_fit', 'usage_ema', 'num_updates', 'probs'):
        torch.testing.assert_close(getattr(unchecked, name),
                                   getattr(checked, name))
    nan = torch.full((6, ), float('nan'), dtype=torch.float64)
    unchecked.update_usage(nan, check=False)
    assert unchecked.num_updates.item() == 3
    torch.testing.assert_close(unchecked.tau, checked.tau)
    assert torch.isfinite(unchecked.usage_ema).all()
