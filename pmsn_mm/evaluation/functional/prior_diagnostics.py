"""Diagnostics of the mean prototype probability p̄ against a cluster prior.

Pure functions used by :class:`~pmsn_mm.engine.hooks.PrototypeUsageHook`:
entropy and effective number of clusters of p̄, the KL divergence in both
directions (``KL(p̄ ‖ prior)``, paper eq. (msn_prior), and ``KL(prior ‖ p̄)``,
lightly's direction), the cumulative set of used prototypes; and the argmax
usage and most probable samples of each prototype (the prototype gallery).
The log-log rank-vs-probability plot is
:func:`pmsn_mm.visualization.plot_rank_probability`.
"""
from typing import Dict, Tuple

import numpy as np
import torch
from torch import Tensor

from pmsn_mm.models.utils.distributions import entropy, kl_divergence


def _check_probs(mean_probs: Tensor, prior: Tensor) -> None:
    for name, p in (('mean_probs', mean_probs), ('prior', prior)):
        if p.dim() != 1 or p.numel() == 0:
            raise ValueError(f'{name} must be a non-empty 1-D tensor (K,), '
                             f'got shape {tuple(p.shape)}.')
        if not torch.isfinite(p).all() or (p < 0).any():
            raise ValueError(f'{name} must be finite and non-negative.')
    if mean_probs.numel() != prior.numel():
        raise ValueError(f'mean_probs has {mean_probs.numel()} entries but '
                         f'the prior has {prior.numel()}; both must be (K,).')


def effective_num_clusters(p: Tensor) -> Tensor:
    """Perplexity ``exp(H(p))``: K for a uniform p, 1 for a one-hot p.

    Args:
        p: Tensor of shape (..., K), probability vectors.

    Returns:
        Tensor of shape (...).
    """
    return entropy(p).exp()


def prior_diagnostics(mean_probs: Tensor, prior: Tensor) -> Dict[str, float]:
    """Entropy, effective clusters and KL (both ways) of p̄ against a prior.

    Computed in float64.

    Args:
        mean_probs: Tensor of shape (K,), the mean prototype probability p̄.
        prior: Tensor of shape (K,), the cluster prior.

    Returns:
        Dict with ``entropy`` (``H(p̄)``), ``effective_clusters``
        (``exp H(p̄)``), ``kl_forward`` (``KL(p̄ ‖ prior)``), ``kl_reverse``
        (``KL(prior ‖ p̄)``), ``prior_entropy`` and
        ``prior_effective_clusters``.
    """
    _check_probs(mean_probs, prior)
    p = mean_probs.detach().double().cpu()
    q = prior.detach().double().cpu()
    return dict(
        entropy=float(entropy(p)),
        effective_clusters=float(effective_num_clusters(p)),
        kl_forward=float(kl_divergence(p, q)),
        kl_reverse=float(kl_divergence(q, p)),
        prior_entropy=float(entropy(q)),
        prior_effective_clusters=float(effective_num_clusters(q)))


def sorted_probabilities(mean_probs: Tensor,
                         prior: Tensor) -> Tuple[Tensor, Tensor]:
    """p̄ and the prior, each sorted in decreasing order (rank 1 first).

    Args:
        mean_probs: Tensor of shape (K,).
        prior: Tensor of shape (K,).

    Returns:
        Two tensors of shape (K,).
    """
    _check_probs(mean_probs, prior)
    return (mean_probs.detach().sort(descending=True).values,
            prior.detach().sort(descending=True).values)


def update_used_prototypes(used: Tensor, probs: Tensor) -> Tensor:
    """Add the argmax prototypes of ``probs`` to the set ``used``.

    Args:
        used: Bool tensor of shape (K,), prototypes used so far.
        probs: Tensor of shape (N, K), prototype probabilities.

    Returns:
        Bool tensor of shape (K,): ``used`` or the argmax of any row.
    """
    if probs.dim() != 2 or used.shape != (probs.shape[1], ):
        raise ValueError(f'expected used (K,) and probs (N, K), got '
                         f'{tuple(used.shape)} and {tuple(probs.shape)}.')
    out = used.clone().bool()
    out[probs.argmax(dim=1).to(out.device)] = True
    return out


def usage_counts(probs: Tensor) -> np.ndarray:
    """How many samples have each prototype as their argmax.

    Args:
        probs: Tensor of shape (N, K).

    Returns:
        Int array of shape (K,).
    """
    return np.bincount(
        probs.argmax(dim=1).cpu().numpy(), minlength=probs.shape[1])


def top_samples_per_prototype(probs: Tensor, num: int) -> Tensor:
    """For each prototype k, the ``num`` samples with the highest ``p_k``.

    Args:
        probs: Tensor of shape (N, K).
        num: Samples per prototype (clipped to N).

    Returns:
        Long tensor of shape (K, min(num, N)), most probable first.
    """
    return probs.T.topk(min(num, probs.shape[0]), dim=1).indices
