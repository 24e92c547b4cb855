import pytest
import torch

from pmsn_mm.models.utils import distributed_sinkhorn


def reference_sinkhorn(probs, num_iters):
    """Official MSN distributed_sinkhorn (src/losses.py), one process."""
    q = probs.T.clone()
    num_protos, batch = q.shape
    q /= q.sum()
    for _ in range(num_iters):
        q /= q.sum(dim=1, keepdim=True)
        q /= num_protos
        q /= q.sum(dim=0, keepdim=True)
        q /= batch
    q *= batch
    return q.T


def _positive(batch=12, num_protos=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(
        batch, num_protos, generator=gen, dtype=torch.float64) + 0.05


def test_sinkhorn_marginals():
    probs = _positive()
    out = distributed_sinkhorn(probs, num_iters=50)
    torch.testing.assert_close(out.sum(dim=1), torch.ones(12, dtype=out.dtype))
    # Prototype marginals approach uniform B / K = 3.
    torch.testing.assert_close(
        out.sum(dim=0),
        torch.full((4, ), 3.0, dtype=out.dtype),
        rtol=0,
        atol=1e-8)


@pytest.mark.parametrize('num_iters', [1, 3])
def test_sinkhorn_equals_reference(num_iters):
    probs = _positive(seed=1)
    torch.testing.assert_close(
        distributed_sinkhorn(probs, num_iters),
        reference_sinkhorn(probs, num_iters))


def test_sinkhorn_does_not_modify_input_and_has_no_grad():
    probs = _positive().requires_grad_(True)
    before = probs.detach().clone()
    out = distributed_sinkhorn(probs)
    assert torch.equal(probs.detach(), before)
    assert not out.requires_grad


def test_sinkhorn_invalid_iterations():
    with pytest.raises(ValueError, match='num_iters must be >= 1'):
        distributed_sinkhorn(_positive(), num_iters=0)


def test_sinkhorn_invalid_shape():
    with pytest.raises(ValueError, match=r'probs must have shape \(B, K\)'):
        distributed_sinkhorn(torch.rand(2, 3, 4))


# ------------------------------------------------ prior-matched marginals
def _power_law(num_protos, tau=0.7):
    w = torch.arange(1, num_protos + 1, dtype=torch.float64)**-tau
    return w / w.sum()


def reference_scaling_sinkhorn(probs, row_marginal, col_marginal,
                               num_iters=20000):
    """Float64 Sinkhorn in vector-scaling form, Q = diag(a) P diag(b).

    Solves for a (per sample) and b (per prototype) such that the (B, K)
    matrix ``a_i * P_ik * b_k`` has row sums ``row_marginal`` and column sums
    ``col_marginal`` (Cuturi 2013, Alg. 1); a different parametrisation from
    the function under test.
    """
    p = probs.double()
    b = torch.ones(p.shape[1], dtype=torch.float64)
    for _ in range(num_iters):
        a = row_marginal / (p @ b)
        b = col_marginal / (p.T @ a)
    return a[:, None] * p * b[None, :]


def test_sinkhorn_prior_marginals_match_brute_force():
    batch, num_protos = 24, 6
    probs = _positive(batch, num_protos, seed=3)
    prior = _power_law(num_protos)
    out = distributed_sinkhorn(probs, num_iters=300, col_marginal=prior)
    # rows are assignments, columns hold B * prior
    torch.testing.assert_close(
        out.sum(dim=1), torch.ones(batch, dtype=torch.float64),
        rtol=0, atol=1e-12)
    torch.testing.assert_close(
        out.sum(dim=0), batch * prior, rtol=0, atol=1e-6)
    ref = reference_scaling_sinkhorn(
        probs, torch.ones(batch, dtype=torch.float64), batch * prior)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
    # I-projection structure: log(out / probs) = alpha_i + beta_k, so the
    # doubly centred log-ratio vanishes.
    log_ratio = (out / probs).log()
    centred = (log_ratio - log_ratio.mean(dim=0, keepdim=True) -
               log_ratio.mean(dim=1, keepdim=True) + log_ratio.mean())
    assert centred.abs().max().item() < 1e-10


def test_sinkhorn_prior_rank_one_input_closed_form():
    # P = u v^T: after one iteration every sample's code is the prior itself
    # (the only matrix of the form diag(a) P diag(b) with those marginals).
    gen = torch.Generator().manual_seed(0)
    u = torch.rand(10, generator=gen, dtype=torch.float64) + 0.1
    v = torch.rand(5, generator=gen, dtype=torch.float64) + 0.1
    prior = _power_law(5, tau=1.3)
    out = distributed_sinkhorn(u[:, None] * v[None, :], 1, prior)
    torch.testing.assert_close(
        out, prior.expand(10, 5), rtol=0, atol=1e-14)


@pytest.mark.parametrize('num_iters', [1, 3])
def test_sinkhorn_prior_equals_restated_iteration(num_iters):
    """The official iteration with the row step ``/ K`` replaced by
    ``* prior``, re-stated; and the uniform prior gives the official
    result."""
    probs = _positive(seed=4)
    prior = _power_law(4, tau=0.5)
    q = probs.T.clone()
    q /= q.sum()
    for _ in range(num_iters):
        q /= q.sum(dim=1, keepdim=True)
        q *= prior[:, None]
        q /= q.sum(dim=0, keepdim=True)
        q /= q.shape[1]
    q *= q.shape[1]
    torch.testing.assert_close(
        distributed_sinkhorn(probs, num_iters, prior), q.T)
    uniform = torch.full((4, ), 0.25, dtype=torch.float64)
    torch.testing.assert_close(
        distributed_sinkhorn(probs, num_iters, uniform),
        reference_sinkhorn(probs, num_iters), rtol=0, atol=1e-15)


def test_sinkhorn_none_marginal_is_bitwise_the_official_iteration():
    probs = _positive(seed=5).float()
    assert torch.equal(
        distributed_sinkhorn(probs, 3, col_marginal=None),
        reference_sinkhorn(probs, 3))


def test_sinkhorn_float32_prior_is_cast_to_probs_dtype():
    probs = _positive(seed=6)
    prior = _power_law(4)
    out64 = distributed_sinkhorn(probs, 50, prior)
    out32 = distributed_sinkhorn(probs.float(), 50, prior.float())
    assert out32.dtype == torch.float32
    torch.testing.assert_close(out32.double(), out64, rtol=0, atol=1e-5)


@pytest.mark.parametrize('prior, match', [
    (torch.full((3, ), 1 / 3), r'col_marginal must have shape \(K,\) with '
     r'K = number of prototypes = 4, but has shape \(3,\)'),
    (torch.full((2, 2), 0.25), r'col_marginal must have .* \(2, 2\)'),
    (torch.tensor([0.5, 0.5, 0.0, 0.0]), r'col_marginal must be > 0 for '
     r'every prototype, but entries \[2, 3\] are <= 0'),
    (torch.tensor([0.6, 0.6, -0.1, -0.1]),
     r'col_marginal must be > 0 .* entries \[2, 3\] are <= 0'),
    (torch.tensor([0.25, float('nan'), 0.25, 0.5]),
     'col_marginal must be finite'),
    (torch.tensor([0.2, 0.2, 0.2, 0.2]),
     r'col_marginal must sum to 1 \(within 0.0001\), but sums to 0.8'),
])
def test_sinkhorn_invalid_col_marginal(prior, match):
    with pytest.raises(ValueError, match=match):
        distributed_sinkhorn(_positive(), col_marginal=prior)


@pytest.mark.parametrize('prior', [None, _power_law(4)])
def test_sinkhorn_prototype_without_mass_raises(prior):
    probs = _positive()
    probs[:, 2] = 0.0  # e.g. underflowed sharpened probabilities
    with pytest.raises(ValueError, match=r'prototypes \[2\] have zero \(or '
                       r'NaN\) total mass over the global batch'):
        distributed_sinkhorn(probs, col_marginal=prior)


@pytest.mark.parametrize('prior', [None, _power_law(4)])
def test_sinkhorn_without_validation_makes_no_host_sync(prior):
    from tests._profiling.op_counter import OpCounter, assert_host_syncs
    probs = _positive()
    with OpCounter() as counter:
        out = distributed_sinkhorn(probs, 3, prior, validate=False)
    assert_host_syncs(counter, what='distributed_sinkhorn(validate=False)')
    torch.testing.assert_close(out, distributed_sinkhorn(probs, 3, prior))
    with pytest.raises(ValueError, match=r'col_marginal must have shape'):
        distributed_sinkhorn(probs, 3, torch.full((3, ), 1 / 3),
                             validate=False)  # shapes are host metadata
