"""Diagnostics of the mean prototype probability p̄ against a cluster prior.

Pure functions of the prototype hooks and analysis tools: entropy and effective
number of clusters of p̄, the KL divergence both ways (``KL(p̄ ‖ prior)``,
Assran et al., ICLR 2023, arXiv:2210.07277, eq. (9), and ``KL(prior ‖ p̄)``,
lightly's), prototype usage, NMI of the argmax assignments with labels
(:func:`assignment_stats`) and a collapse indicator.
"""
from typing import Dict, Mapping, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
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
    """Entropy, effective clusters, KL (both ways) of p̄ and prior (float64).

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


def usage_counts(probs: Tensor) -> np.ndarray:
    """How many samples have each prototype as their argmax.

    Args:
        probs: Tensor of shape (N, K).

    Returns:
        Int array of shape (K,).
    """
    return np.bincount(
        probs.argmax(dim=1).cpu().numpy(), minlength=probs.shape[1])


def normalized_mutual_info(a: np.ndarray, b: np.ndarray) -> float:
    """Normalised mutual information of two labelings (scikit-learn's
    arithmetic normalisation): 1 for the same partition, 0 for independent.

    Args:
        a: Int array of shape (N,).
        b: Int array of shape (N,).

    Returns:
        float in [0, 1].
    """
    # scikit-learn only where it is used (`import pmsn_mm` stays light)
    from sklearn.metrics import normalized_mutual_info_score
    return float(normalized_mutual_info_score(np.asarray(a), np.asarray(b)))


def assignment_stats(probs: Tensor,
                     prior: Tensor,
                     labels: Optional[Mapping[str, np.ndarray]] = None
                     ) -> Dict[str, object]:
    """Argmax assignments of N samples vs their labels and the prior (f64).

    Args:
        probs: Tensor of shape (N, K), the samples' prototype probabilities.
        prior: Tensor of shape (K,), the cluster prior.
        labels: ``{name: int array (N,)}``, each giving ``nmi_<name>`` (NMI
            of the argmax prototype with it). Defaults to None.

    Returns:
        ``nmi_<name>`` per label; ``usage_sorted`` (argmax shares),
        ``mean_probs_sorted`` (p̄), ``prior_sorted`` (decreasing lists);
        ``num_used``; ``mean_anchor_entropy`` (mean ``H(p_i)``),
        ``mean_probs_entropy``, ``kl_mean_probs_prior`` and
        ``kl_usage_prior`` (sorted usage vs sorted prior).
    """
    if probs.dim() != 2 or probs.shape[0] == 0:
        raise ValueError('probs must be a non-empty (N, K) tensor, got '
                         f'shape {tuple(probs.shape)}.')
    probs = probs.detach().double().cpu()
    mean_probs = probs.mean(dim=0)
    _check_probs(mean_probs, prior)
    prior = prior.detach().double().cpu()
    argmax = probs.argmax(dim=1).numpy()
    out: Dict[str, object] = {}
    for name, label in (labels or {}).items():
        if len(label) != len(argmax):
            raise ValueError(f'label {name!r} has {len(label)} entries but '
                             f'probs has {len(argmax)} rows.')
        out[f'nmi_{name}'] = normalized_mutual_info(argmax, label)
    usage = torch.from_numpy(usage_counts(probs) / len(argmax))
    usage_sorted, prior_sorted = sorted_probabilities(usage, prior)
    out.update(
        usage_sorted=usage_sorted.tolist(),
        mean_probs_sorted=mean_probs.sort(descending=True).values.tolist(),
        prior_sorted=prior_sorted.tolist(),
        num_used=int((usage > 0).sum()),
        mean_anchor_entropy=float(entropy(probs).mean()),
        mean_probs_entropy=float(entropy(mean_probs)),
        kl_mean_probs_prior=float(kl_divergence(mean_probs, prior)),
        kl_usage_prior=float(kl_divergence(usage_sorted, prior_sorted)))
    return out


def collapse_indicator(embeddings: Tensor) -> float:
    """Mean over dimensions of the std of L2-normalised embeddings, times
    ``sqrt(D)``: about 1 for isotropic embeddings, 0 for collapsed ones.

    Args:
        embeddings: Tensor of shape (N, D), N >= 2.

    Returns:
        float.
    """
    if embeddings.dim() != 2 or embeddings.shape[0] < 2:
        raise ValueError('embeddings must be (N, D) with N >= 2, got shape '
                         f'{tuple(embeddings.shape)}.')
    z = F.normalize(embeddings.detach().double(), dim=1)
    return float(z.std(dim=0).mean() * z.shape[1]**0.5)
