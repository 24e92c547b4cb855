"""PSwAVLoss (stateless: prototypes and prior probabilities are passed in)
and the PSwAVHead that owns them, against SwAV's formula and mmpretrain's
SwAVLoss."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmpretrain.models.losses import SwAVLoss
from mmpretrain.registry import MODELS

from pmsn_mm.models.heads import PSwAVHead
from pmsn_mm.models.losses import PSwAVLoss
from pmsn_mm.models.priors import PowerLawPrior
from pmsn_mm.models.utils import kl_divergence


def restated_pswav_loss(x, weight, prior, num_crops, crops_for_assign,
                        epsilon=0.05, temperature=0.1, num_iters=3):
    """SwAV's loss (facebookresearch/swav main_swav.py) re-stated in float64,
    with the Sinkhorn prototype step ``/ K`` replaced by ``* prior``."""
    x = x.double()
    w = F.normalize(weight.double(), dim=1)
    prior = prior.double()
    scores = x @ w.T
    total = sum(num_crops)
    bs = x.shape[0] // total
    loss, all_codes = 0.0, []
    for crop_id in crops_for_assign:
        Q = torch.exp(scores[bs * crop_id:bs * (crop_id + 1)] / epsilon).T
        B = Q.shape[1]
        Q = Q / Q.sum()
        for _ in range(num_iters):
            Q = Q / Q.sum(dim=1, keepdim=True) * prior[:, None]
            Q = Q / Q.sum(dim=0, keepdim=True) / B
        q = (Q * B).T
        all_codes.append(q)
        subloss = 0.0
        for v in np.delete(np.arange(total), crop_id):
            p = F.softmax(scores[bs * v:bs * (v + 1)] / temperature, dim=1)
            subloss -= torch.mean(torch.sum(q * torch.log(p), dim=1))
        loss += subloss / (total - 1)
    return loss / len(crops_for_assign), torch.cat(all_codes)


def _inputs(bs=6, total=3, dim=8, num_protos=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = F.normalize(
        torch.randn(total * bs, dim, generator=gen, dtype=torch.float64),
        dim=1)
    weight = torch.randn(num_protos, dim, generator=gen, dtype=torch.float64)
    return x, weight


def _head(weight, prior=None, **loss_kwargs):
    """A float64 PSwAVHead whose prototypes are a copy of ``weight``."""
    head = MODELS.build(
        dict(
            type='PSwAVHead',
            num_prototypes=weight.shape[0],
            in_channels=weight.shape[1],
            prior=prior,
            loss=dict(type='PSwAVLoss', **loss_kwargs))).double()
    head.prototypes.data.copy_(weight)
    return head


def _power_law(num_protos, tau):
    return PowerLawPrior(num_protos, tau).probs


@pytest.mark.parametrize('num_crops, assign', [([2], [0, 1]),
                                               ([2, 2], [0, 1]),
                                               ([1, 2], [1])])
@pytest.mark.parametrize('tau', [0.0, 0.9])
def test_equals_restated_formula(num_crops, assign, tau):
    x, weight = _inputs(total=sum(num_crops))
    head = _head(weight, num_crops=num_crops, crops_for_assign=assign,
                 prior=dict(type='PowerLawPrior', tau=tau))
    out = head.loss(x)
    ref, codes = restated_pswav_loss(x, weight, _power_law(5, tau), num_crops,
                                     assign)
    torch.testing.assert_close(out['loss_swav'], ref, rtol=0, atol=1e-10)
    mean_code = codes.mean(dim=0)
    torch.testing.assert_close(out['codes_prior_kl'],
                               kl_divergence(mean_code, _power_law(5, tau)))
    assert out['num_prototypes_used'].item() == len(
        set(codes.argmax(dim=1).tolist()))
    assert set(out) == {'loss_swav', 'codes_prior_kl', 'num_prototypes_used'}


@pytest.mark.parametrize('tau', [0.0, 0.9])
def test_head_equals_stateless_loss_call(tau):
    """The head normalises its prototypes and passes them and the prior's
    probabilities to the loss module, nothing else."""
    x, weight = _inputs()
    loss = PSwAVLoss(num_crops=[3])
    head = _head(weight, prior=dict(type='PowerLawPrior', tau=tau),
                 num_crops=[3])
    out = head.loss(x)
    prior = _power_law(5, tau)
    direct, stats = loss(x, F.normalize(weight, dim=1), prior,
                         sinkhorn_marginal=None if tau == 0.0 else prior)
    assert set(direct) == set(out)
    # the head asks the prior for the marginal: None for a uniform one
    assert (head.prior.sinkhorn_marginal() is None) == (tau == 0.0)
    assert torch.equal(head.step_statistics().prototypes_used,
                       stats.prototypes_used)
    for key, value in direct.items():
        torch.testing.assert_close(out[key], value, rtol=0, atol=0)


@pytest.mark.parametrize('use_queue', [False, True])
def test_uniform_prior_equals_mmpretrain_swav(use_queue):
    x, weight = _inputs(bs=4, total=2)
    ours = _head(weight, epsilon=0.03, temperature=0.2)
    theirs = SwAVLoss(feat_dim=8, epsilon=0.03, temperature=0.2,
                      num_prototypes=5).double()
    theirs.prototypes.weight.data.copy_(weight)
    if use_queue:
        gen = torch.Generator().manual_seed(3)
        queue = F.normalize(
            torch.randn(2, 8, 8, generator=gen, dtype=torch.float64), dim=2)
        # SwAVHook's slot: head.loss_module.queue
        ours.loss_module.queue, theirs.queue = queue.clone(), queue.clone()
    out = ours.loss(x)
    torch.testing.assert_close(out['loss_swav'], theirs(x), rtol=0,
                               atol=1e-12)
    # both normalised their prototypes in place
    torch.testing.assert_close(ours.prototypes.data,
                               theirs.prototypes.weight.data, rtol=0, atol=0)
    if use_queue:
        assert ours.loss_module.use_queue and theirs.use_queue
        torch.testing.assert_close(ours.loss_module.queue, theirs.queue)


def test_uniform_prior_gradients_equal_mmpretrain_swav():
    x, weight = _inputs(bs=4, total=2)
    ours = _head(weight)
    theirs = SwAVLoss(feat_dim=8, num_prototypes=5).double()
    # the other way round: mmpretrain's prototypes copied into ours
    theirs.prototypes.weight.data.copy_(weight)
    ours.prototypes.data.copy_(theirs.prototypes.weight.data)
    x_ours = x.clone().requires_grad_(True)
    x_theirs = x.clone().requires_grad_(True)
    ours.loss(x_ours)['loss_swav'].backward()
    theirs(x_theirs).backward()
    torch.testing.assert_close(ours.prototypes.grad,
                               theirs.prototypes.weight.grad, rtol=0,
                               atol=1e-12)
    torch.testing.assert_close(x_ours.grad, x_theirs.grad, rtol=0,
                               atol=1e-12)


def test_prototype_init_draws_as_mmpretrain_swav():
    """The head's prototypes are drawn as SwAVLoss's nn.Linear(D, K,
    bias=False) default init: same distribution, same RNG draws."""
    torch.manual_seed(7)
    ours = PSwAVHead(num_prototypes=30, in_channels=16)
    torch.manual_seed(7)
    theirs = SwAVLoss(feat_dim=16, num_prototypes=30)
    assert ours.prototypes.shape == theirs.prototypes.weight.shape
    torch.testing.assert_close(ours.prototypes.data,
                               theirs.prototypes.weight.data)
    bound = math.sqrt(1 / 16)
    assert ours.prototypes.abs().max().item() <= bound


def test_converged_codes_have_prior_cluster_sizes():
    x, weight = _inputs(bs=20, total=2)
    prior = _power_law(5, 0.7)
    head = _head(weight, sinkhorn_iterations=500,
                 prior=dict(type='PowerLawPrior', tau=0.7))
    codes = head.loss_module.codes(x[:20] @ F.normalize(weight, dim=1).T,
                                   prior)
    torch.testing.assert_close(codes.sum(dim=1), torch.ones(20,
                               dtype=torch.float64))
    torch.testing.assert_close(codes.sum(dim=0), 20 * prior, rtol=0,
                               atol=1e-6)
    assert head.loss(x)['codes_prior_kl'].item() < 1e-10


def test_codes_are_shift_invariant_and_do_not_overflow():
    """Scores are shifted by their global maximum before exp: with epsilon
    0.01, float32 exp(scores / epsilon) overflows, the codes do not, and
    they equal the float64 codes of the unshifted formula."""
    gen = torch.Generator().manual_seed(0)
    scores = 0.2 + 0.8 * torch.rand(6, 5, generator=gen, dtype=torch.float64)
    prior = _power_law(5, 0.5)
    loss = PSwAVLoss(epsilon=0.01)
    assert torch.isinf(torch.exp(scores.float() / 0.01)).any()
    codes32 = loss.codes(scores.float(), prior.float())
    assert codes32.dtype == torch.float32
    Q = torch.exp(scores / 0.01).T
    Q = Q / Q.sum()
    for _ in range(3):
        Q = Q / Q.sum(dim=1, keepdim=True) * prior[:, None]
        Q = Q / Q.sum(dim=0, keepdim=True) / 6
    torch.testing.assert_close(codes32.double(), (6 * Q).T, rtol=0,
                               atol=1e-5)


def test_gradients_reach_prototypes_and_embeddings():
    x, weight = _inputs()
    x.requires_grad_(True)
    head = _head(weight, num_crops=[3],
                 prior=dict(type='PowerLawPrior', tau=0.5))
    out = head.loss(x)
    out['loss_swav'].backward()
    assert head.prototypes.grad is not None
    assert torch.isfinite(head.prototypes.grad).all()
    assert head.prototypes.grad.abs().sum() > 0
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    for key, value in out.items():
        assert value.requires_grad == ('loss' in key), key


def test_prototypes_are_renormalised_each_step():
    x, weight = _inputs()
    head = _head(3.0 * weight, num_crops=[3])
    head.loss(x)
    torch.testing.assert_close(head.prototypes.norm(dim=1),
                               torch.ones(5, dtype=torch.float64))
    # the loss itself does not touch the prototypes it is given
    prototypes = 3.0 * weight
    PSwAVLoss(num_crops=[3])(x, prototypes, _power_law(5, 0.5))
    torch.testing.assert_close(prototypes, 3.0 * weight, rtol=0, atol=0)


def test_adaptive_prior_learns_from_pre_sinkhorn_codes():
    x, weight = _inputs(bs=6, total=3)
    head = _head(weight, crops_for_assign=[0, 2],
                 num_crops=[3],
                 prior=dict(type='AdaptivePowerLawPrior', tau_init=0.3,
                            momentum=0.0))
    head.eval()
    out = head.loss(x)
    assert head.prior.num_updates.item() == 0
    assert out['prior_tau'].item() == pytest.approx(0.3)
    head.train()
    out = head.loss(x)
    assert head.prior.num_updates.item() == 1
    ref, _ = restated_pswav_loss(x, weight, _power_law(5, 0.3), [3], [0, 2])
    torch.testing.assert_close(out['loss_swav'], ref)  # used tau_init
    scores = x @ F.normalize(weight, dim=1).T
    soft = torch.cat([F.softmax(scores[:6] / 0.05, dim=1),
                      F.softmax(scores[12:] / 0.05, dim=1)])
    torch.testing.assert_close(head.prior.usage_ema, soft.mean(dim=0))
    slope = np.polyfit(np.log(np.arange(1, 6)),
                       np.log(np.sort(soft.mean(dim=0).numpy())[::-1]), 1)[0]
    assert out['prior_tau_fit'].item() == pytest.approx(-slope, abs=1e-10)
    assert 'usage' not in out


def test_return_usage_is_the_mean_pre_sinkhorn_code():
    x, weight = _inputs(bs=6, total=3)
    loss = PSwAVLoss(crops_for_assign=[0, 2], num_crops=[3])
    w = F.normalize(weight, dim=1)
    _, stats = loss(x, w, _power_law(5, 0.3), return_usage=True)
    scores = x @ w.T
    soft = torch.cat([F.softmax(scores[:6] / 0.05, dim=1),
                      F.softmax(scores[12:] / 0.05, dim=1)])
    assert stats.usage.dtype == torch.float64
    assert not stats.usage.requires_grad
    torch.testing.assert_close(stats.usage, soft.mean(dim=0))
    assert loss(x, w, _power_law(5, 0.3))[1].usage is None


# --- validation: one test per check -------------------------------------
@pytest.mark.parametrize('kwargs, match', [
    (dict(sinkhorn_iterations=0), 'sinkhorn_iterations must be an int >= 1'),
    (dict(epsilon=0.0), r'epsilon must be in \(0, inf\) but is 0.0'),
    (dict(temperature=float('nan')), r'temperature must be in \(0, inf\)'),
    (dict(num_crops=[]), 'num_crops must list the number of crops'),
    (dict(num_crops=[2, 0]), 'num_crops entries must be an int >= 1'),
    (dict(num_crops=[1], crops_for_assign=[0]), r'needs >= 2 crops in total'),
    (dict(crops_for_assign=[0, 2]), r'crops_for_assign must be a non-empty '
     r'list of crop indices in \[0, 2\) \(sum\(num_crops\)=2\), but is '
     r'\[0, 2\]'),
    (dict(crops_for_assign=[]), 'crops_for_assign must be a non-empty'),
])
def test_invalid_settings(kwargs, match):
    with pytest.raises(ValueError, match='PSwAVLoss ' + match):
        PSwAVLoss(**kwargs)


@pytest.mark.parametrize('kwargs', [
    dict(feat_dim=8), dict(num_prototypes=5),
    dict(prior=dict(type='UniformPrior'))
])
def test_loss_has_no_prototypes_or_prior(kwargs):
    """They moved to PSwAVHead."""
    with pytest.raises(TypeError, match='unexpected keyword argument'):
        PSwAVLoss(**kwargs)
    assert not list(PSwAVLoss().parameters())
    assert not PSwAVLoss().state_dict()


@pytest.mark.parametrize('kwargs, match', [
    (dict(in_channels=0), 'in_channels must be an int >= 1 but is 0'),
    (dict(num_prototypes=[3000, 100]), r'num_prototypes must be an int >= 1 '
     r'but is \[3000, 100\]'),
])
def test_invalid_head_settings(kwargs, match):
    cfg = dict(in_channels=8, num_prototypes=5)
    cfg.update(kwargs)
    with pytest.raises(ValueError, match=match):
        PSwAVHead(**cfg)


def test_invalid_input_shape():
    x, weight = _inputs(bs=3, total=2)
    head = _head(weight)
    with pytest.raises(ValueError, match=r'input must have shape '
                       r'\(sum\(num_crops\) \* B, D\) = \(2 \* B, D\) with '
                       r"the prototypes' D, but has shape \(5, 8\) "
                       r'\(prototypes \(5, 8\)\)'):
        head.loss(x[:5])
    with pytest.raises(ValueError, match=r'but has shape \(6, 7\)'):
        head.loss(x[:, :7])
    with pytest.raises(ValueError, match=r'but has shape \(0, 8\)'):
        head.loss(x[:0])


def test_invalid_prior_probs_shape():
    x, weight = _inputs(bs=3, total=2)
    with pytest.raises(ValueError, match=r'prior_probs must have shape '
                       r'\(K,\) = \(5,\), got \(4,\)'):
        PSwAVLoss()(x, weight, _power_law(4, 0.5))


def test_prior_length_mismatch():
    _, weight = _inputs()
    # raised when the head builds its prior, before any step
    with pytest.raises(ValueError, match='ClassPrior counts has length 3, '
                       'but must have length num_prototypes=5'):
        _head(weight, num_crops=[3],
              prior=dict(type='ClassPrior', counts=[1, 2, 3]))


def test_half_precision_scores_are_upcast():
    x, weight = _inputs()
    head = _head(weight, num_crops=[3]).float()
    with torch.autocast('cpu', dtype=torch.bfloat16):
        out = head.loss(x.float())
    assert out['loss_swav'].dtype == torch.float32
    assert math.isfinite(out['loss_swav'].item())
