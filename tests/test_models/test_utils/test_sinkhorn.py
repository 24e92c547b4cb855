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
