"""Diagnostics of the mean prototype probability p̄ against a cluster prior.

Pure functions used by :class:`~pmsn_mm.engine.hooks.PrototypeUsageHook`:
entropy and effective number of clusters of p̄, the KL divergence in both
directions (``KL(p̄ ‖ prior)``, Assran et al., ICLR 2023, arXiv:2210.07277,
eq. (9), and ``KL(prior ‖ p̄)``, lightly's direction), the cumulative set of
used prototypes; and the argmax usage and most probable samples of each
prototype (the prototype gallery); the argmax assignments of labelled samples
(:func:`assignment_stats`: NMI with each label, usage and p̄ against the
prior, entropies) and a collapse indicator of embeddings. The log-log
rank-vs-probability plot is
:func:`pmsn_mm.visualization.plot_rank_probability`.
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


def normalized_mutual_info(a: np.ndarray, b: np.ndarray) -> float:
    """Normalised mutual information of two labelings (arithmetic mean
    normalisation, scikit-learn's default): 1 for the same partition, 0 for
    independent ones.

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
    """Argmax assignments of N samples against their labels and the prior.

    Computed in float64.

    Args:
        probs: Tensor of shape (N, K), the samples' prototype probabilities.
        prior: Tensor of shape (K,), the cluster prior.
        labels: ``{name: int array of shape (N,)}``; each gives
            ``nmi_<name>``, the NMI of the argmax prototype with it.
            Defaults to None (no label).

    Returns:
        Dict with ``nmi_<name>`` per label; ``usage_sorted`` (share of the
        samples whose argmax is each prototype), ``mean_probs_sorted`` (p̄)
        and ``prior_sorted``, each a list in decreasing order; ``num_used``
        (prototypes that are some sample's argmax); ``mean_anchor_entropy``
        (mean of ``H(p_i)``), ``mean_probs_entropy`` (``H(p̄)``),
        ``kl_mean_probs_prior`` (``KL(p̄ ‖ prior)``) and ``kl_usage_prior``
        (KL of the sorted usage to the sorted prior).
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
    """How spread L2-normalised embeddings are: the mean over dimensions of
    their std over samples, times ``sqrt(D)``; about 1 for isotropic
    embeddings, 0 when every sample has the same embedding.

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
