"""Log-log rank-vs-probability plot of p̄ against the prior (paper §5: a
power-law prior is a straight line)."""
from typing import Optional

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from torch import Tensor

from ..evaluation.functional.prior_diagnostics import sorted_probabilities


def plot_rank_probability(mean_probs: Tensor,
                          prior: Tensor,
                          out_file: Optional[str] = None,
                          title: Optional[str] = None) -> np.ndarray:
    """Log-log plot of sorted p̄ (rank vs probability) with the prior overlaid.

    Matplotlib's Agg canvas (no display, no pyplot state); entries of p̄
    that are 0 are left out (log axis).

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
