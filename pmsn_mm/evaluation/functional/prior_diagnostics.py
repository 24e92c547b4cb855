"""Diagnostics of the mean prototype probability p̄ against a cluster prior.

Pure functions used by :class:`~pmsn_mm.engine.hooks.PrototypeUsageHook`:
entropy and effective number of clusters of p̄, the KL divergence in both
directions (``KL(p̄ ‖ prior)``, paper eq. (msn_prior), and ``KL(prior ‖ p̄)``,
lightly's direction), the cumulative set of used prototypes and a log-log
rank-vs-probability plot (paper §5: a power-law prior is a straight line).
"""
from typing import Dict, Optional, Tuple

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from torch import Tensor

from pmsn_mm.models.losses import entropy, kl_divergence


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


def plot_rank_probability(mean_probs: Tensor,
                          prior: Tensor,
                          out_file: Optional[str] = None,
                          title: Optional[str] = None) -> np.ndarray:
    """Log-log plot of sorted p̄ (rank vs probability) with the prior overlaid.

    Drawn with matplotlib's Agg canvas (no display, no pyplot state).
    Entries of p̄ that are exactly 0 cannot be drawn on a log axis and are
    left out (their ranks stay empty).

    Args:
        mean_probs: Tensor of shape (K,), the mean prototype probability p̄.
        prior: Tensor of shape (K,), the cluster prior.
        out_file: If given, the PNG is written there.
        title: Optional figure title.

    Returns:
        The figure as an RGB uint8 array of shape (H, W, 3).
    """
    p_sorted, q_sorted = (
        t.double().cpu().numpy()
        for t in sorted_probabilities(mean_probs, prior))
    ranks = np.arange(1, len(p_sorted) + 1)
    fig = Figure(figsize=(5, 4), dpi=100)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    keep = q_sorted > 0
    ax.loglog(ranks[keep], q_sorted[keep], 'k--', label='prior')
    keep = p_sorted > 0
    ax.loglog(
        ranks[keep],
        p_sorted[keep],
        'o-',
        color='tab:blue',
        markersize=3,
        label=r'mean probability $\bar{p}$ (sorted)')
    ax.set_xlabel('prototype rank')
    ax.set_ylabel('probability')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(loc='lower left')
    if title:
        ax.set_title(title)
    fig.tight_layout()
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    if out_file is not None:
        fig.savefig(out_file, format='png')
    return image
