"""VICRegLoss: official formula, exact values, 2 gloo ranks, validation."""
import os

import pytest
import torch
import torch.multiprocessing as mp
import torch.nn.functional as F

from pmsn_mm.models.losses import VICRegLoss
from pmsn_mm.models.losses.vicreg_loss import off_diagonal
from tests._dist import free_port, gloo_group

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

WORLD_SIZE = 2
LOCAL_BATCH = 6
DIM = 5


def official_vicreg(x, y, sim_coeff=25.0, std_coeff=25.0, cov_coeff=1.0):
    """``VICReg.forward`` of facebookresearch/vicreg after the projector, on
    one process (``FullGatherLayer`` is the identity): returns the three
    weighted terms."""
    batch_size, num_features = x.shape
    repr_loss = F.mse_loss(x, y)
    x = x - x.mean(dim=0)
    y = y - y.mean(dim=0)
    std_x = torch.sqrt(x.var(dim=0) + 0.0001)
    std_y = torch.sqrt(y.var(dim=0) + 0.0001)
    std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(
        F.relu(1 - std_y)) / 2
    cov_x = (x.T @ x) / (batch_size - 1)
    cov_y = (y.T @ y) / (batch_size - 1)
    mask = ~torch.eye(num_features, dtype=torch.bool)
    cov_loss = cov_x[mask].pow(2).sum() / num_features + cov_y[mask].pow(
        2).sum() / num_features
    return (sim_coeff * repr_loss, std_coeff * std_loss, cov_coeff * cov_loss)


def _inputs(batch=WORLD_SIZE * LOCAL_BATCH, dim=DIM, seed=0):
    gen = torch.Generator().manual_seed(seed)
    # scales around 1 so that some dimensions sit below the std hinge
    scale = torch.linspace(0.3, 2.0, dim, dtype=torch.float64)
    z_a = torch.randn(batch, dim, generator=gen, dtype=torch.float64) * scale
    z_b = z_a + 0.5 * torch.randn(
        batch, dim, generator=gen, dtype=torch.float64)
    return z_a, z_b


def _losses(out):
    return out['loss_invariance'], out['loss_variance'], out['loss_covariance']


@pytest.mark.parametrize('weights', [(25.0, 25.0, 1.0), (1.0, 3.0, 0.5)])
def test_matches_official_formula(weights):
    z_a, z_b = _inputs(batch=16, dim=7)
    out = VICRegLoss(*weights)(z_a, z_b)
    expected = official_vicreg(z_a, z_b, *weights)
    for got, want in zip(_losses(out), expected):
        assert got.item() == pytest.approx(want.item(), abs=1e-6)
    # some dimensions below std 1, some above: the hinge is active
    assert 0 < out['loss_variance'].item()
    assert out['std_min'].item() < 1


def test_gradients_match_official_formula():
    z_a, z_b = _inputs(batch=10, dim=4)
    a1, b1 = z_a.clone().requires_grad_(), z_b.clone().requires_grad_()
    sum(_losses(VICRegLoss()(a1, b1))).backward()
    a2, b2 = z_a.clone().requires_grad_(), z_b.clone().requires_grad_()
    sum(official_vicreg(a2, b2)).backward()
    torch.testing.assert_close(a1.grad, a2.grad, rtol=0, atol=1e-10)
    torch.testing.assert_close(b1.grad, b2.grad, rtol=0, atol=1e-10)


def test_exact_values_on_hand_built_embeddings():
    # Columns of a scaled Hadamard design: mean 0, uncorrelated, std 2.
    h = torch.tensor([[1, 1, 1], [1, -1, 1], [1, 1, -1], [1, -1, -1]],
                     dtype=torch.float64)[:, 1:]
    z = 2 * h * (4 / 3)**-0.5  # unbiased std of each column == 2
    out = VICRegLoss()(z, z)
    assert out['loss_invariance'].item() == 0
    assert out['loss_variance'].item() == 0  # std >= 1: hinge inactive
    assert out['loss_covariance'].item() == pytest.approx(0, abs=1e-12)
    assert out['std_mean'].item() == pytest.approx((4 + 1e-4)**0.5)
    # constant embeddings: std = sqrt(eps) = 0.01 in every dimension
    const = torch.ones(4, 3, dtype=torch.float64)
    out = VICRegLoss()(const, const + 1)
    assert out['loss_invariance'].item() == pytest.approx(25.0)
    assert out['loss_variance'].item() == pytest.approx(25 * 0.99)


def test_off_diagonal():
    x = torch.arange(9.).view(3, 3)
    assert off_diagonal(x).tolist() == [1., 2., 3., 5., 6., 7.]


def _worker(rank, port, out_dir):
    with gloo_group(rank, WORLD_SIZE, port):
        z_a, z_b = _inputs()
        rows = slice(rank * LOCAL_BATCH, (rank + 1) * LOCAL_BATCH)
        z_a = z_a[rows].clone().requires_grad_(True)
        z_b = z_b[rows].clone().requires_grad_(True)
        out = VICRegLoss()(z_a, z_b)
        sum(_losses(out)).backward()
        torch.save(
            dict(
                out={k: v.detach()
                     for k, v in out.items()},
                grad_a=z_a.grad,
                grad_b=z_b.grad), os.path.join(out_dir, f'rank{rank}.pt'))


def test_two_processes_match_one_process_on_global_batch(tmp_path):
    mp.spawn(
        _worker,
        args=(free_port(), str(tmp_path)),
        nprocs=WORLD_SIZE,
        join=True)
    ranks = [torch.load(tmp_path / f'rank{r}.pt') for r in range(WORLD_SIZE)]
    z_a, z_b = _inputs()
    z_a.requires_grad_(True)
    z_b.requires_grad_(True)
    out = VICRegLoss()(z_a, z_b)
    sum(_losses(out)).backward()

    # Variance, covariance and the std statistics use the gathered batch:
    # every rank equals 1 process on the concatenated batch.
    for res in ranks:
        for key in ('loss_variance', 'loss_covariance', 'std_mean',
                    'std_min'):
            torch.testing.assert_close(res['out'][key], out[key].detach())
    # The invariance term is a local mean: the mean over equal-size ranks
    # is the global mean.
    torch.testing.assert_close(
        torch.stack([res['out']['loss_invariance'] for res in ranks]).mean(),
        out['loss_invariance'].detach())
    # DDP optimises J = mean_r L_r = L (the 1-process loss on the global
    # batch). With the gather's sum-over-ranks backward, rank r's gradient
    # of its own loss on its rows is dL_r/dz_r (local) + sum_s dS_s/dz_r
    # (shared terms S), which is W * dL/dz[rows of r]; DDP's 1/W averaging
    # of the parameter gradients then gives exactly dL/dtheta.
    for rank, res in enumerate(ranks):
        rows = slice(rank * LOCAL_BATCH, (rank + 1) * LOCAL_BATCH)
        torch.testing.assert_close(res['grad_a'],
                                   WORLD_SIZE * z_a.grad[rows])
        torch.testing.assert_close(res['grad_b'],
                                   WORLD_SIZE * z_b.grad[rows])


@pytest.mark.parametrize('kwargs, match', [
    (dict(invariance_weight=-1.0), 'invariance_weight must be'),
    (dict(variance_weight=float('nan')), 'variance_weight must be'),
    (dict(covariance_weight=float('inf')), 'covariance_weight must be'),
    (dict(eps=0.0), r'eps must be in \(0, inf\)'),
    (dict(eps=-1e-4), r'eps must be in \(0, inf\)'),
])
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VICRegLoss(**kwargs)


def test_bad_inputs_raise():
    loss = VICRegLoss()
    with pytest.raises(ValueError, match='same shape'):
        loss(torch.randn(4, 3), torch.randn(4, 2))
    with pytest.raises(ValueError, match='same shape'):
        loss(torch.randn(4, 3, 1), torch.randn(4, 3, 1))
    with pytest.raises(ValueError, match='at least 2 embeddings'):
        loss(torch.randn(1, 3), torch.randn(1, 3))
