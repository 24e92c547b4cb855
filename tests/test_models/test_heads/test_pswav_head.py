"""PSwAVHead: owns the prototypes and the prior, builds the prior with its K,
updates a learned prior from the usage the (stateless) loss returns, in
training mode only."""
import copy

import pytest
import torch
import torch.nn.functional as F
from mmpretrain.registry import MODELS
from torch import nn

from pmsn_mm.models.heads import PSwAVHead, build_prior
from pmsn_mm.models.losses import PSwAVLoss
from pmsn_mm.models.priors import (AdaptivePowerLawPrior, PowerLawPrior,
                                   UniformPrior)

K, D, B = 6, 8, 5
ADAPTIVE = dict(type='AdaptivePowerLawPrior', tau_init=0.3, momentum=0.5)


def _x(total=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(total * B, D, generator=gen), dim=1)


def _head(prior=None, **loss_kwargs):
    return PSwAVHead(
        num_prototypes=K,
        in_channels=D,
        prior=prior,
        loss=dict(type='PSwAVLoss', **loss_kwargs))


def _buffers(prior):
    return {k: v.clone() for k, v in prior.named_buffers()}


def _assert_buffers_equal(prior, before):
    after = dict(prior.named_buffers())
    assert set(after) == set(before)
    for name, value in before.items():
        assert torch.equal(after[name], value), name


# ------------------------------------------------------------- building
def test_defaults_are_swav():
    head = MODELS.build(dict(type='PSwAVHead'))
    assert head.num_prototypes == 3000 and head.in_channels == 128
    assert isinstance(head.prior, UniformPrior) and head.prior.is_uniform
    assert head.prior.num_prototypes == 3000
    assert isinstance(head.loss_module, PSwAVLoss)
    assert isinstance(head.prototypes, nn.Parameter)
    assert tuple(head.prototypes.shape) == (3000, 128)
    bound = (1 / 128)**0.5
    assert head.prototypes.abs().max().item() <= bound
    # SwAVHook's slots
    assert head.loss_module.queue is None
    assert not head.loss_module.use_queue


def test_prior_is_built_with_the_heads_num_prototypes():
    head = _head(prior=dict(type='PowerLawPrior', tau=0.5))
    assert isinstance(head.prior, PowerLawPrior)
    assert head.prior.num_prototypes == K
    torch.testing.assert_close(head.prior.probs,
                               PowerLawPrior(K, 0.5).probs)
    # the prior is a submodule: moved with the head, its buffer too
    assert dict(head.named_buffers())['prior.probs'] is head.prior.probs
    # a fixed prior is not checkpointed; the prototypes are
    assert set(head.state_dict()) == {'prototypes'}


def test_build_prior_rejects_another_num_prototypes():
    # a config naming another K
    with pytest.raises(
            ValueError, match="prior num_prototypes=4 differs from the "
            "head's num_prototypes=6"):
        build_prior(dict(type='PowerLawPrior', tau=0.5, num_prototypes=4), K)
    with pytest.raises(ValueError, match='differs from the head'):
        _head(prior=dict(type='AdaptivePowerLawPrior', num_prototypes=4))
    # a built prior with another K
    with pytest.raises(
            ValueError, match='PowerLawPrior has num_prototypes=4 but the '
            'head has num_prototypes=6'):
        _head(prior=PowerLawPrior(4, 0.5))
    # the head's own K is accepted, in a config or a built prior
    prior = build_prior(dict(type='UniformPrior', num_prototypes=K), K)
    assert isinstance(prior, UniformPrior) and prior.num_prototypes == K
    built = PowerLawPrior(K, 0.5)
    assert _head(prior=built).prior is built
    assert isinstance(build_prior(None, K), UniformPrior)
    with pytest.raises(TypeError, match='prior must be a BasePrior'):
        build_prior(nn.Identity(), K)


def test_prototype_init_matches_nn_linear():
    torch.manual_seed(3)
    head = _head(prior=dict(type='PowerLawPrior', tau=0.5))
    torch.manual_seed(3)
    linear = nn.Linear(D, K, bias=False)
    torch.testing.assert_close(head.prototypes.data, linear.weight.data)


# -------------------------------------------------------------- the step
def test_loss_keys_and_normalised_prototypes():
    head = _head(prior=dict(type='PowerLawPrior', tau=0.5))
    head.prototypes.data.mul_(3.0)
    out = head.loss(_x())
    assert set(out) == {'loss_swav', 'num_prototypes_used', 'codes_prior_kl'}
    torch.testing.assert_close(head.prototypes.norm(dim=1), torch.ones(K))
    assert out['loss_swav'].requires_grad
    assert out['loss_swav'].dtype == torch.float32


def test_learned_prior_updates_in_train_mode_only():
    head = _head(prior=ADAPTIVE)
    assert isinstance(head.prior, AdaptivePowerLawPrior)
    assert head.prior.num_prototypes == K
    x = _x()

    head.eval()
    assert not head.learns_prior_now
    before = _buffers(head.prior)
    out = head.loss(x)
    _assert_buffers_equal(head.prior, before)
    assert head.prior.num_updates.item() == 0
    # the statistics are reported in eval mode too, unchanged
    assert out['prior_tau'].item() == pytest.approx(0.3)
    assert out['prior_tau_fit'].item() == pytest.approx(0.3)
    assert 'usage' not in out

    head.train()
    assert head.learns_prior_now
    probs_before = head.prior.probs.clone()
    out = head.loss(x)
    assert head.prior.num_updates.item() == 1
    assert head.prior.usage_ema.abs().sum().item() > 0
    assert 'usage' not in out
    assert out['prior_tau'].dtype == out['loss_swav'].dtype
    assert not out['prior_tau'].requires_grad
    assert out['prior_tau'].item() == pytest.approx(head.prior.tau.item())
    assert out['prior_tau_fit'].item() == pytest.approx(
        head.prior.tau_fit.item())
    assert head.prior.tau.item() != 0.3
    assert not torch.equal(head.prior.probs, probs_before)
    # the loss backpropagates after the prior was updated
    out['loss_swav'].backward()
    assert head.prototypes.grad is not None

    head.eval()
    before = _buffers(head.prior)
    head.loss(x)
    _assert_buffers_equal(head.prior, before)


def test_fixed_prior_is_never_updated():
    head = _head(prior=dict(type='PowerLawPrior', tau=0.5))
    head.train()
    assert not head.learns_prior_now
    before = _buffers(head.prior)
    out = head.loss(_x())
    _assert_buffers_equal(head.prior, before)
    assert 'prior_tau' not in out


def test_loss_module_never_mutates_the_prior():
    """Called directly with return_usage, the loss returns the usage and
    leaves the prior (and the prototypes) alone: only the head updates."""
    head = _head(prior=ADAPTIVE, num_crops=[3],
                 crops_for_assign=[0, 2]).double()
    head.train()
    head.normalize_prototypes()
    prototypes = head.prototypes.detach().clone()
    before = _buffers(head.prior)
    out, stats = head.loss_module(
        _x(total=3).double(),
        head.prototypes,
        head.prior.probs,
        sinkhorn_marginal=head.prior.sinkhorn_marginal(),
        return_usage=True)
    _assert_buffers_equal(head.prior, before)
    assert torch.equal(head.prototypes.detach(), prototypes)
    usage = stats.usage
    assert usage.shape == (K, ) and usage.dtype == torch.float64
    assert usage.sum().item() == pytest.approx(1.0)
    assert not any(k.startswith('prior_') for k in out)
    # feeding that usage to the prior is what the head does
    ref = copy.deepcopy(head.prior)
    ref.update_usage(usage)
    head.loss(_x(total=3).double())
    for name, value in ref.state_dict().items():
        torch.testing.assert_close(head.prior.state_dict()[name], value)


def test_learned_prior_state_is_checkpointed_with_the_head():
    head = _head(prior=ADAPTIVE)
    head.train()
    for seed in range(3):
        head.loss(_x(seed=seed))
    state = head.state_dict()
    assert {'prior.tau', 'prior.tau_fit', 'prior.usage_ema',
            'prior.num_updates', 'prototypes'} == set(state)
    resumed = _head(prior=ADAPTIVE)
    resumed.load_state_dict(state)
    assert resumed.prior.num_updates.item() == 3
    assert torch.equal(resumed.prior.probs, head.prior.probs)
