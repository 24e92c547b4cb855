import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmpretrain.registry import MODELS

from pmsn_mm.models.heads import PMSNHead, prototype_log_probabilities
from pmsn_mm.models.losses import PMSNLoss
from pmsn_mm.models.priors import PowerLawPrior, UniformPrior
from pmsn_mm.models.utils import distributed_sinkhorn, kl_divergence, sharpen
from pmsn_mm.utils.power_law import power_law_probs
from tests._pmsn import pmsn_head


def official_msn_loss(anchors,
                      targets,
                      prototypes,
                      num_views,
                      tau=0.1,
                      T=0.25,
                      smoothing=0.0,
                      use_sinkhorn=False):
    """init_msn_loss of facebookresearch/msn (src/losses.py), re-stated."""
    num_protos = prototypes.shape[0]
    off_value = smoothing / num_protos
    on_value = 1.0 - smoothing + off_value
    proto_labels = torch.full((num_protos, num_protos),
                              off_value,
                              dtype=anchors.dtype)
    proto_labels.fill_diagonal_(on_value)

    def snn(query, supports):
        query = F.normalize(query)
        supports = F.normalize(supports)
        return F.softmax(query @ supports.T / tau, dim=1) @ proto_labels

    def official_sharpen(p):
        sharp_p = p**(1.0 / T)
        return sharp_p / torch.sum(sharp_p, dim=1, keepdim=True)

    probs = snn(anchors, prototypes)
    with torch.no_grad():
        target_probs = official_sharpen(snn(targets, prototypes))
        if use_sinkhorn:
            target_probs = official_sinkhorn(target_probs)
        target_probs = torch.cat([target_probs] * num_views, dim=0)
    ce = torch.mean(torch.sum(torch.log(probs**(-target_probs)), dim=1))
    avg_probs = torch.mean(probs, dim=0)
    me_max = (-torch.sum(torch.log(avg_probs**(-avg_probs))) +
              math.log(float(len(avg_probs))))
    ent = torch.mean(torch.sum(torch.log(probs**(-probs)), dim=1))
    return ce, me_max, ent, target_probs


def official_sinkhorn(Q, num_itr=3):
    """distributed_sinkhorn of facebookresearch/msn, one process."""
    Q = Q.T.clone()
    B, K = Q.shape[1], Q.shape[0]
    Q /= torch.sum(Q)
    for _ in range(num_itr):
        Q /= torch.sum(Q, dim=1, keepdim=True)
        Q /= K
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B
    Q *= B
    return Q.T


def _inputs(batch_size=6,
            num_views=1,
            dim=8,
            num_protos=5,
            seed=0,
            dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    anchors = torch.randn(
        batch_size * num_views, dim, generator=gen, dtype=dtype)
    targets = torch.randn(batch_size, dim, generator=gen, dtype=dtype)
    prototypes = torch.randn(num_protos, dim, generator=gen, dtype=dtype)
    return anchors, targets, prototypes


@pytest.mark.parametrize('num_views', [1, 3])
@pytest.mark.parametrize('smoothing', [0.0, 0.2])
@pytest.mark.parametrize('use_sinkhorn', [False, True])
def test_uniform_prior_equals_official_msn(num_views, smoothing, use_sinkhorn):
    anchors, targets, prototypes = _inputs(num_views=num_views)
    head = pmsn_head(
        prototypes,
        label_smoothing=smoothing,
        use_sinkhorn=use_sinkhorn,
        entropy_weight=0.3)
    out = head.loss(anchors, targets)
    ce, me_max, ent, target_probs = official_msn_loss(
        anchors,
        targets,
        prototypes,
        num_views,
        smoothing=smoothing,
        use_sinkhorn=use_sinkhorn)
    tol = dict(rtol=0, atol=1e-6)
    torch.testing.assert_close(out['loss_ce'], ce, **tol)
    torch.testing.assert_close(out['loss_prior'], me_max, **tol)
    torch.testing.assert_close(out['prior_kl'], me_max, **tol)
    torch.testing.assert_close(out['loss_entropy'], 0.3 * ent, **tol)
    # Total (what mmengine sums) = official MSN with memax_weight 1.
    total = sum(v for k, v in out.items() if 'loss' in k)
    torch.testing.assert_close(total, ce + me_max + 0.3 * ent, **tol)
    torch.testing.assert_close(out['max_target_prob'],
                               target_probs.max(dim=1).values.mean(), **tol)
    assert out['num_prototypes_used'].item() == len(
        set(target_probs.argmax(dim=1).tolist()))


def test_loss_keys_and_detached_stats():
    anchors, targets, prototypes = _inputs(dtype=torch.float32)
    out = pmsn_head(prototypes).loss(anchors, targets)
    assert set(out) == {
        'loss_ce', 'loss_prior', 'prior_kl', 'mean_probs_entropy',
        'num_prototypes_used', 'max_target_prob'
    }
    for key, value in out.items():
        assert isinstance(value, torch.Tensor) and value.dim() == 0
        assert value.requires_grad == ('loss' in key)
        assert value.dtype == torch.float32


def test_mean_probs_entropy_and_prior_weight():
    anchors, targets, prototypes = _inputs(num_views=2)
    out = pmsn_head(prototypes, prior_weight=2.5).loss(anchors, targets)
    probs = F.softmax(
        F.normalize(anchors) @ F.normalize(prototypes).T / 0.1, dim=1)
    mean_probs = probs.mean(dim=0)
    torch.testing.assert_close(out['mean_probs_entropy'],
                               -(mean_probs * mean_probs.log()).sum())
    torch.testing.assert_close(out['loss_prior'], 2.5 * out['prior_kl'])


def test_kl_hand_computed_both_directions():
    p = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    w = [1.0, 2**-0.5, 3**-0.5, 0.5]
    q = [x / sum(w) for x in w]
    forward = sum(pk * math.log(pk / qk) for pk, qk in zip(p.tolist(), q))
    reverse = sum(qk * math.log(qk / pk) for pk, qk in zip(p.tolist(), q))
    q = torch.from_numpy(power_law_probs(4, 0.5))
    assert kl_divergence(p, q).item() == pytest.approx(forward, abs=1e-12)
    assert kl_divergence(q, p).item() == pytest.approx(reverse, abs=1e-12)


@pytest.mark.parametrize('direction', ['forward', 'reverse'])
def test_loss_prior_kl_hand_computed(direction):
    # Orthonormal prototypes: logits are the anchors' cosine similarities.
    prototypes = torch.eye(4, dtype=torch.float64)
    anchors = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.6, 0.8, 0.0]],
                           dtype=torch.float64)
    targets = anchors.clone()
    rows = [[1.0, 0.0, 0.0, 0.0], [0.0, 0.6, 0.8, 0.0]]
    probs = []
    for row in rows:
        e = [math.exp(x / 0.1) for x in row]
        probs.append([x / sum(e) for x in e])
    p_mean = [(a + b) / 2 for a, b in zip(*probs)]
    w = [1.0, 2**-0.5, 3**-0.5, 0.5]
    q = [x / sum(w) for x in w]
    if direction == 'forward':
        expected = sum(a * math.log(a / b) for a, b in zip(p_mean, q))
    else:
        expected = sum(b * math.log(b / a) for a, b in zip(p_mean, q))
    head = pmsn_head(
        prototypes,
        prior=dict(type='PowerLawPrior', tau=0.5),
        kl_direction=direction,
        prior_weight=0.5)
    out = head.loss(anchors, targets)
    assert out['prior_kl'].item() == pytest.approx(expected, abs=1e-12)
    assert out['loss_prior'].item() == pytest.approx(0.5 * expected, abs=1e-12)


@pytest.mark.parametrize('direction', ['forward', 'reverse'])
@pytest.mark.parametrize('smoothing', [0.0, 0.1])
def test_empty_prototypes_finite_loss_and_grads(direction, smoothing):
    # All anchors point at prototype 0; prototype 1 is opposite, so its
    # probability exp(-2 / 0.01) underflows to exactly 0 in float32.
    anchors = torch.tensor([[1.0, 0.0, 0.0]] * 4, requires_grad=True)
    targets = torch.tensor([[1.0, 0.0, 0.0]] * 2)
    prototypes = torch.tensor(
        [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    probs = F.softmax(anchors.detach() @ prototypes.T / 0.01, dim=1)
    if smoothing == 0.0:
        assert probs.mean(dim=0)[1].item() == 0.0  # really empty
    head = pmsn_head(
        prototypes,
        temperature=0.01,
        label_smoothing=smoothing,
        kl_direction=direction,
        entropy_weight=1.0,
        prior=dict(type='PowerLawPrior', tau=1.0))
    out = head.loss(anchors, targets)
    for value in out.values():
        assert torch.isfinite(value)
    sum(v for k, v in out.items() if 'loss' in k).backward()
    assert torch.isfinite(anchors.grad).all()
    assert torch.isfinite(head.prototypes.grad).all()


def test_prior_module_or_config():
    anchors, targets, prototypes = _inputs()
    from_cfg = pmsn_head(prototypes,
                         prior=dict(type='PowerLawPrior', tau=0.25))
    built = pmsn_head(prototypes, prior=PowerLawPrior(5, 0.25))
    assert isinstance(PMSNHead(5, 8).prior, UniformPrior)
    torch.testing.assert_close(
        from_cfg.loss(anchors, targets)['loss_prior'],
        built.loss(anchors, targets)['loss_prior'])


def test_built_from_registry():
    loss = MODELS.build(dict(type='PMSNLoss', sharpen_temperature=0.2))
    assert isinstance(loss, PMSNLoss) and loss.sharpen_temperature == 0.2
    head = MODELS.build(dict(type='PMSNHead', num_prototypes=3,
                             in_channels=4, temperature=0.2))
    assert isinstance(head, PMSNHead) and head.temperature == 0.2


def test_sharpen_equals_official_and_sharpen_temperature():
    gen = torch.Generator().manual_seed(1)
    probs = F.softmax(
        torch.randn(4, 6, generator=gen, dtype=torch.float64), dim=1)
    official = probs**4 / (probs**4).sum(dim=1, keepdim=True)
    torch.testing.assert_close(sharpen(probs, 0.25), official)

    anchors, targets, prototypes = _inputs()
    head = pmsn_head(prototypes, sharpen_temperature=0.5)
    assert head.loss_module.sharpen_temperature == 0.5
    ce, *_ = official_msn_loss(anchors, targets, prototypes, 1, T=0.5)
    torch.testing.assert_close(head.loss(anchors, targets)['loss_ce'], ce)


def test_prior_length_mismatch_raises_when_built():
    anchors, targets, prototypes = _inputs(num_protos=5)
    with pytest.raises(ValueError, match='ClassPrior counts has length 3, '
                       'but must have length num_prototypes=5'):
        pmsn_head(prototypes, prior=dict(type='ClassPrior', counts=[1, 2, 3]))


def test_half_precision_inputs_are_upcast():
    anchors, targets, prototypes = _inputs(dtype=torch.float32)
    head = pmsn_head(prototypes.bfloat16())
    out16 = head.loss(anchors.bfloat16(), targets.bfloat16())
    assert out16['loss_ce'].dtype == torch.float32


# --- validation: one test per check -------------------------------------


@pytest.mark.parametrize('value', [0.0, -1.0, -0.25, float('nan')])
def test_invalid_sharpen_temperature(value):
    with pytest.raises(
            ValueError, match=r'sharpen_temperature must be in \(0, inf\)'):
        PMSNLoss(sharpen_temperature=value)


@pytest.mark.parametrize('value', [-1.0, float('inf')])
def test_invalid_prior_weight(value):
    with pytest.raises(
            ValueError, match=r'prior_weight must be in \[0, inf\)'):
        PMSNLoss(prior_weight=value)


def test_invalid_kl_direction():
    with pytest.raises(
            ValueError,
            match="kl_direction must be one of "
            r"\('forward', 'reverse'\)"):
        PMSNLoss(kl_direction='backward')


@pytest.mark.parametrize('value', [0, 2.0])
def test_invalid_sinkhorn_iterations(value):
    with pytest.raises(ValueError, match='sinkhorn_iterations must be an int'):
        PMSNLoss(sinkhorn_iterations=value)


def test_invalid_entropy_weight():
    with pytest.raises(
            ValueError, match=r'entropy_weight must be in \[0, inf'):
        PMSNLoss(entropy_weight=-1.0)


def test_anchor_rows_not_multiple_of_target_rows():
    anchors, targets, prototypes = _inputs(batch_size=4)
    with pytest.raises(
            ValueError,
            match=r'positive multiple.*anchors \(4, 8\), '
            r'targets \(3, 8\)'):
        pmsn_head(prototypes).loss(anchors, targets[:3])


def test_feature_dim_mismatch():
    anchors, targets, prototypes = _inputs()
    with pytest.raises(
            ValueError, match=r'same feature dim D.*prototypes \(5, 7\)'):
        pmsn_head(prototypes[:, :7]).loss(anchors, targets)


def test_inputs_must_be_2d():
    anchors, targets, prototypes = _inputs()
    with pytest.raises(ValueError, match=r'must be 2-D.*anchors \(1, 6, 8\)'):
        pmsn_head(prototypes).loss(anchors[None], targets)


def test_loss_checks_probability_shapes():
    log_probs = torch.randn(6, 5).log_softmax(dim=1)
    targets = torch.randn(3, 5).softmax(dim=1)
    prior = torch.full((5, ), 0.2)
    with pytest.raises(ValueError, match=r'must be 2-D.*\(1, 6, 5\)'):
        PMSNLoss()(log_probs[None], targets, prior)
    with pytest.raises(ValueError, match=r'positive multiple.*\(4, 5\)'):
        PMSNLoss()(log_probs, targets[:1].repeat(4, 1), prior)
    with pytest.raises(ValueError, match=r'same number of prototypes K'):
        PMSNLoss()(log_probs, targets[:, :4], prior)
    with pytest.raises(ValueError, match=r'prior_probs must have shape '
                       r'\(K,\) = \(5,\), got \(4,\)'):
        PMSNLoss()(log_probs, targets, prior[:4])


# --- Sinkhorn towards the prior, priors learned from usage ---------------


def prior_sinkhorn(Q, prior, num_itr):
    """official_sinkhorn with the prototype step ``/ K`` -> ``* prior``."""
    Q = Q.T.clone()
    B = Q.shape[1]
    Q /= torch.sum(Q)
    for _ in range(num_itr):
        Q /= torch.sum(Q, dim=1, keepdim=True)
        Q *= prior[:, None]
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B
    Q *= B
    return Q.T


def _targets_and_ce(anchors, targets, prototypes, num_views, codes_fn):
    probs = F.softmax(
        F.normalize(anchors) @ F.normalize(prototypes).T / 0.1, dim=1)
    p = F.softmax(F.normalize(targets) @ F.normalize(prototypes).T / 0.1,
                  dim=1)
    sharp = p**4 / (p**4).sum(dim=1, keepdim=True)
    codes = codes_fn(sharp)
    ce = -(codes.repeat(num_views, 1) * probs.log()).sum(dim=1).mean()
    return sharp, codes, ce


@pytest.mark.parametrize('num_iters', [3, 300])
def test_sinkhorn_uses_the_power_law_prior(num_iters):
    anchors, targets, prototypes = _inputs(batch_size=10, num_views=2)
    prior = torch.from_numpy(power_law_probs(5, 0.8))
    head = pmsn_head(prototypes, use_sinkhorn=True,
                     sinkhorn_iterations=num_iters,
                     prior=dict(type='PowerLawPrior', tau=0.8))
    out = head.loss(anchors, targets)
    _, codes, ce = _targets_and_ce(
        anchors, targets, prototypes, 2,
        lambda q: prior_sinkhorn(q, prior, num_iters))
    torch.testing.assert_close(out['loss_ce'], ce, rtol=0, atol=1e-10)
    # not the uniform Sinkhorn
    _, uniform_codes, uniform_ce = _targets_and_ce(
        anchors, targets, prototypes, 2,
        lambda q: official_sinkhorn(q, num_iters))
    assert abs(out['loss_ce'].item() - uniform_ce.item()) > 1e-3
    if num_iters == 300:  # converged: cluster sizes B * prior
        torch.testing.assert_close(
            codes.sum(dim=0), 10 * prior, rtol=0, atol=1e-6)


@pytest.mark.parametrize('prior', [
    dict(type='UniformPrior'),
    dict(type='ClassPrior', counts=[7, 7, 7, 7, 7]),
    dict(type='PowerLawPrior', tau=0.0),
])
def test_uniform_prior_sinkhorn_is_bitwise_msn_sinkhorn(prior):
    """Any prior with equal entries runs the uniform Sinkhorn: the loss is
    bit for bit the computation before priors reached Sinkhorn."""
    anchors, targets, prototypes = _inputs(num_views=2, dtype=torch.float32)
    head = pmsn_head(prototypes, use_sinkhorn=True, prior=prior)
    assert head.prior.is_uniform and head.prior.sinkhorn_marginal() is None
    out = head.loss(anchors, targets)
    codes = distributed_sinkhorn(
        sharpen(prototype_log_probabilities(targets, prototypes, 0.1).exp(),
                0.25), 3)
    ce = -torch.sum(codes.repeat(2, 1) * prototype_log_probabilities(
        anchors, prototypes, 0.1), dim=1).mean()
    assert torch.equal(out['loss_ce'], ce)


def test_adaptive_prior_learns_from_pre_sinkhorn_target_usage():
    anchors, targets, prototypes = _inputs(batch_size=8, num_views=2)
    head = pmsn_head(
        prototypes,
        use_sinkhorn=True,
        prior_weight=2.0,
        prior=dict(type='AdaptivePowerLawPrior',
                   tau_init=0.4, momentum=0.5))
    sharp, _, _ = _targets_and_ce(anchors, targets, prototypes, 2,
                                  lambda q: q)
    prior_before = torch.from_numpy(power_law_probs(5, 0.4))
    # eval mode: the prior is used, not updated
    head.eval()
    out = head.loss(anchors, targets)
    assert head.prior.num_updates.item() == 0
    assert out['prior_tau'].item() == pytest.approx(0.4)
    # train mode: this step uses tau_init, then learns from the usage
    head.train()
    out = head.loss(anchors, targets)
    probs = F.softmax(
        F.normalize(anchors) @ F.normalize(prototypes).T / 0.1, dim=1)
    torch.testing.assert_close(
        out['prior_kl'], kl_divergence(probs.mean(dim=0), prior_before))
    _, _, ce = _targets_and_ce(
        anchors, targets, prototypes, 2,
        lambda q: prior_sinkhorn(q, prior_before, 3))
    torch.testing.assert_close(out['loss_ce'], ce)
    usage = sharp.mean(dim=0)  # before Sinkhorn
    torch.testing.assert_close(head.prior.usage_ema, 0.5 * usage)
    slope = np.polyfit(np.log(np.arange(1, 6)),
                       np.log(np.sort(usage.numpy())[::-1]), 1)[0]
    assert out['prior_tau_fit'].item() == pytest.approx(-slope, abs=1e-10)
    assert out['prior_tau'].item() == pytest.approx(
        min(max(-slope, 0.0), 1.0), abs=1e-10)
    assert not out['prior_tau'].requires_grad
    # the next step uses the updated prior
    torch.testing.assert_close(
        head.prior.probs,
        torch.from_numpy(power_law_probs(5, out['prior_tau'].item())))


def test_adaptive_prior_can_learn_from_anchor_usage():
    anchors, targets, prototypes = _inputs(batch_size=8, num_views=2)
    head = pmsn_head(prototypes, prior_usage='anchors',
                     prior=dict(type='AdaptivePowerLawPrior', momentum=0.0))
    out = head.loss(anchors, targets)
    probs = F.softmax(
        F.normalize(anchors) @ F.normalize(prototypes).T / 0.1, dim=1)
    torch.testing.assert_close(head.prior.usage_ema, probs.mean(dim=0))
    slope = np.polyfit(np.log(np.arange(1, 6)),
                       np.log(np.sort(probs.mean(dim=0).numpy())[::-1]), 1)[0]
    assert out['prior_tau_fit'].item() == pytest.approx(-slope, abs=1e-10)


def test_invalid_prior_usage():
    with pytest.raises(ValueError, match=r"prior_usage must be one of "
                       r"\('targets', 'anchors'\) but is 'codes'"):
        PMSNLoss(prior_usage='codes')
