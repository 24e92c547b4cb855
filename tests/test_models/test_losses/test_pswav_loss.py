import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmpretrain.models.losses import SwAVLoss
from mmpretrain.registry import MODELS

from pmsn_mm.models.losses import PSwAVLoss, kl_divergence
from pmsn_mm.models.priors import PowerLawPrior


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


def _loss(weight, **kwargs):
    cfg = dict(type='PSwAVLoss', feat_dim=weight.shape[1],
               num_prototypes=weight.shape[0])
    cfg.update(kwargs)
    loss = MODELS.build(cfg).double()
    loss.prototypes.weight.data.copy_(weight)
    return loss


@pytest.mark.parametrize('num_crops, assign', [([2], [0, 1]),
                                               ([2, 2], [0, 1]),
                                               ([1, 2], [1])])
@pytest.mark.parametrize('tau', [0.0, 0.9])
def test_equals_restated_formula(num_crops, assign, tau):
    x, weight = _inputs(total=sum(num_crops))
    loss = _loss(weight, num_crops=num_crops, crops_for_assign=assign,
                 prior=dict(type='PowerLawPrior', tau=tau))
    out = loss(x)
    ref, codes = restated_pswav_loss(x, weight, PowerLawPrior(tau)(
        5, torch.float64), num_crops, assign)
    torch.testing.assert_close(out['loss_swav'], ref, rtol=0, atol=1e-10)
    mean_code = codes.mean(dim=0)
    torch.testing.assert_close(
        out['codes_prior_kl'],
        kl_divergence(mean_code, PowerLawPrior(tau)(5, torch.float64)))
    assert out['num_prototypes_used'].item() == len(
        set(codes.argmax(dim=1).tolist()))


@pytest.mark.parametrize('use_queue', [False, True])
def test_uniform_prior_equals_mmpretrain_swav(use_queue):
    x, weight = _inputs(bs=4, total=2)
    ours = _loss(weight, epsilon=0.03, temperature=0.2)
    theirs = SwAVLoss(feat_dim=8, epsilon=0.03, temperature=0.2,
                      num_prototypes=5).double()
    theirs.prototypes.weight.data.copy_(weight)
    if use_queue:
        gen = torch.Generator().manual_seed(3)
        queue = F.normalize(
            torch.randn(2, 8, 8, generator=gen, dtype=torch.float64), dim=2)
        ours.queue, theirs.queue = queue.clone(), queue.clone()
    out = ours(x)
    torch.testing.assert_close(out['loss_swav'], theirs(x), rtol=0,
                               atol=1e-12)
    if use_queue:
        assert ours.use_queue and theirs.use_queue
        torch.testing.assert_close(ours.queue, theirs.queue)


def test_converged_codes_have_prior_cluster_sizes():
    x, weight = _inputs(bs=20, total=2)
    prior = PowerLawPrior(0.7)(5, torch.float64)
    loss = _loss(weight, sinkhorn_iterations=500,
                 prior=dict(type='PowerLawPrior', tau=0.7))
    codes = loss.codes(x[:20] @ F.normalize(weight, dim=1).T, prior)
    torch.testing.assert_close(codes.sum(dim=1), torch.ones(20,
                               dtype=torch.float64))
    torch.testing.assert_close(codes.sum(dim=0), 20 * prior, rtol=0,
                               atol=1e-6)
    assert loss(x)['codes_prior_kl'].item() < 1e-10


def test_codes_are_shift_invariant_and_do_not_overflow():
    """Scores are shifted by their global maximum before exp: with epsilon
    0.01, float32 exp(scores / epsilon) overflows, the codes do not, and
    they equal the float64 codes of the unshifted formula."""
    gen = torch.Generator().manual_seed(0)
    scores = 0.2 + 0.8 * torch.rand(6, 5, generator=gen, dtype=torch.float64)
    prior = PowerLawPrior(0.5)(5, torch.float64)
    loss = _loss(torch.randn(5, 8, dtype=torch.float64), epsilon=0.01)
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
    loss = _loss(weight, prior=dict(type='PowerLawPrior', tau=0.5))
    out = loss(x)
    out['loss_swav'].backward()
    assert loss.prototypes.weight.grad is not None
    assert torch.isfinite(loss.prototypes.weight.grad).all()
    assert loss.prototypes.weight.grad.abs().sum() > 0
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    for key, value in out.items():
        assert value.requires_grad == ('loss' in key), key


def test_prototypes_are_renormalised_each_step():
    x, weight = _inputs()
    loss = _loss(3.0 * weight)
    loss(x)
    torch.testing.assert_close(loss.prototypes.weight.norm(dim=1),
                               torch.ones(5, dtype=torch.float64))


def test_adaptive_prior_learns_from_pre_sinkhorn_codes():
    x, weight = _inputs(bs=6, total=3)
    loss = _loss(weight, crops_for_assign=[0, 2],
                 num_crops=[3],
                 prior=dict(type='AdaptivePowerLawPrior', num_prototypes=5,
                            tau_init=0.3, momentum=0.0))
    loss.eval()
    loss(x)
    assert loss.prior.num_updates.item() == 0
    loss.train()
    out = loss(x)
    ref, _ = restated_pswav_loss(x, weight, PowerLawPrior(0.3)(
        5, torch.float64), [3], [0, 2])
    torch.testing.assert_close(out['loss_swav'], ref)  # used tau_init
    scores = x @ F.normalize(weight, dim=1).T
    soft = torch.cat([F.softmax(scores[:6] / 0.05, dim=1),
                      F.softmax(scores[12:] / 0.05, dim=1)])
    torch.testing.assert_close(loss.prior.usage_ema, soft.mean(dim=0))
    slope = np.polyfit(np.log(np.arange(1, 6)),
                       np.log(np.sort(soft.mean(dim=0).numpy())[::-1]), 1)[0]
    assert out['prior_tau_fit'].item() == pytest.approx(-slope, abs=1e-10)


# --- validation: one test per check -------------------------------------
@pytest.mark.parametrize('kwargs, match', [
    (dict(feat_dim=0), 'feat_dim must be an int >= 1 but is 0'),
    (dict(num_prototypes=[3000, 100]), r'num_prototypes must be an int >= 1 '
     r'but is \[3000, 100\]'),
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
    cfg = dict(feat_dim=8, num_prototypes=5)
    cfg.update(kwargs)
    with pytest.raises(ValueError, match='PSwAVLoss ' + match):
        PSwAVLoss(**cfg)


def test_invalid_input_shape():
    x, weight = _inputs(bs=3, total=2)
    loss = _loss(weight)
    with pytest.raises(ValueError, match=r'input must have shape '
                       r'\(sum\(num_crops\) \* B, feat_dim\) = \(2 \* B, 8\) '
                       r'but has shape \(5, 8\)'):
        loss(x[:5])
    with pytest.raises(ValueError, match=r'but has shape \(6, 7\)'):
        loss(x[:, :7])


def test_prior_length_mismatch():
    x, weight = _inputs()
    loss = _loss(weight, num_crops=[3],
                 prior=dict(type='ClassPrior', counts=[1, 2, 3]))
    with pytest.raises(ValueError, match='num_prototypes=5'):
        loss(x)


def test_half_precision_scores_are_upcast():
    x, weight = _inputs()
    loss = _loss(weight, num_crops=[3]).float()
    with torch.autocast('cpu', dtype=torch.bfloat16):
        out = loss(x.float())
    assert out['loss_swav'].dtype == torch.float32
    assert math.isfinite(out['loss_swav'].item())
