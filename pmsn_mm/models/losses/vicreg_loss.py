"""VICReg loss: invariance, variance and covariance terms.

Bardes et al., ICLR 2022; as the official ``VICReg.forward``
(facebookresearch/vicreg)::

    loss = 25 * mse(z_a, z_b)                                  # local batch
         + 25 * (mean_d relu(1 - std_d(Z_a)) + ... Z_b) / 2    # global batch
         + 1 * (sum_{i != j} C(Z_a)_ij^2 + ... Z_b) / D        # global batch

with ``std_d = sqrt(var_d + 1e-4)`` (unbiased variance), ``C`` the covariance
``Z^T Z / (N - 1)`` of the centred embeddings, and ``Z`` the embeddings of all
ranks (``N`` rows). Paper §3 ("Uniform priors"): with invariance weight much
larger than the variance weight, VICReg recovers K-means with a uniform
cluster prior.
"""
import math
from typing import Dict

import torch
import torch.nn.functional as F
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ..utils.dist import all_gather_with_grad


def off_diagonal(x: Tensor) -> Tensor:
    """The off-diagonal entries of a square matrix.

    Args:
        x: Tensor of shape (D, D).

    Returns:
        Tensor of shape (D * (D - 1),).
    """
    d = x.shape[0]
    return x.flatten()[:-1].view(d - 1, d + 1)[:, 1:].flatten()


def regularized_std(z: Tensor, eps: float = 1e-4) -> Tensor:
    """Per-dimension standard deviation, regularised as in VICReg.

    Args:
        z: Tensor of shape (N, D), N >= 2.
        eps: Added to the unbiased variance before the square root.

    Returns:
        Tensor of shape (D,): ``sqrt(var_d(z) + eps)``.
    """
    return torch.sqrt(z.var(dim=0) + eps)


def covariance_penalty(z: Tensor) -> Tensor:
    """Sum of squared off-diagonal covariances, divided by D.

    Args:
        z: Tensor of shape (N, D), N >= 2.

    Returns:
        Scalar tensor: ``sum_{i != j} C_ij^2 / D`` with
        ``C = (z - mean)^T (z - mean) / (N - 1)``.
    """
    n, d = z.shape
    z = z - z.mean(dim=0)
    cov = (z.t() @ z) / (n - 1)
    return off_diagonal(cov).pow(2).sum() / d


@MODELS.register_module()
class VICRegLoss(nn.Module):
    """VICReg loss of two batches of embeddings (official ``VICReg.forward``).

    Variance and covariance use all ranks' embeddings
    (:func:`all_gather_with_grad`). Returns the weighted ``loss_*`` terms
    and ``std_mean``/``std_min`` of the global per-dimension std.

    Args:
        invariance_weight: Weight of the MSE between the views (official
            ``sim_coeff``, 25). Finite, >= 0.
        variance_weight: Weight of the std hinge (``std_coeff``, 25), >= 0.
        covariance_weight: Covariance penalty weight (``cov_coeff``, 1), >= 0.
        eps: Added to the variance before the square root (1e-4), > 0.
    """

    def __init__(self,
                 invariance_weight: float = 25.0,
                 variance_weight: float = 25.0,
                 covariance_weight: float = 1.0,
                 eps: float = 1e-4) -> None:
        super().__init__()
        for name, value in (('invariance_weight', invariance_weight),
                            ('variance_weight', variance_weight),
                            ('covariance_weight', covariance_weight)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(
                    f'{name} must be a finite number >= 0 but is {value}.')
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f'eps must be in (0, inf) but is {eps}.')
        self.invariance_weight = float(invariance_weight)
        self.variance_weight = float(variance_weight)
        self.covariance_weight = float(covariance_weight)
        self.eps = float(eps)

    def forward(self, z_a: Tensor, z_b: Tensor) -> Dict[str, Tensor]:
        """VICReg loss terms.

        Args:
            z_a: Tensor of shape (B, D), expander output of the first view.
            z_b: Tensor of shape (B, D), of the second view (same images).

        Returns:
            Weighted loss terms and statistics (see the class docstring).
        """
        if z_a.dim() != 2 or z_a.shape != z_b.shape:
            raise ValueError(
                'VICRegLoss needs z_a and z_b of the same shape (B, D), got '
                f'{tuple(z_a.shape)} and {tuple(z_b.shape)}.')
        invariance = F.mse_loss(z_a, z_b)

        z_a = all_gather_with_grad(z_a)
        z_b = all_gather_with_grad(z_b)
        if z_a.shape[0] < 2:
            raise ValueError(
                'VICRegLoss needs at least 2 embeddings over all ranks to '
                f'estimate the variance, got {z_a.shape[0]}.')
        std_a = regularized_std(z_a, self.eps)
        std_b = regularized_std(z_b, self.eps)
        variance = (F.relu(1 - std_a).mean() + F.relu(1 - std_b).mean()) / 2
        covariance = covariance_penalty(z_a) + covariance_penalty(z_b)

        stds = torch.cat([std_a, std_b]).detach()
        return dict(
            loss_invariance=self.invariance_weight * invariance,
            loss_variance=self.variance_weight * variance,
            loss_covariance=self.covariance_weight * covariance,
            std_mean=stds.mean(),
            std_min=stds.min())


__all__ = [
    'VICRegLoss', 'covariance_penalty', 'off_diagonal', 'regularized_std'
]
