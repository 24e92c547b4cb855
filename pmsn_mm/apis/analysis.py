"""Pure functions behind ``tools/analysis_tools`` (paper Figs. 1-4).

K-means on imbalanced 2-D clusters (Fig. 1), cosine nearest neighbours and
their label agreement (Fig. 3), the images each prototype is most probable
for (a cheap stand-in for the RCDM prototype images of Figs. 2/4) and an
image-grid writer (matplotlib's Agg canvas, no pyplot state).
"""
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from torch import Tensor


# ---------------------------------------------------------------- Fig. 1
def two_clusters(balanced: bool = False,
                 seed: int = 0) -> Tuple[np.ndarray, np.ndarray, float]:
    """Two well-separated 2-D clusters, uniform in squares, split along x.

    Imbalanced (default): 900 points in ``[0, 4]²`` and 100 points in
    ``[5, 6] × [1.5, 2.5]``. Balanced: 500 points in ``[0, 4]²`` and 500 in
    ``[5, 9] × [0, 4]``. Either way the true separation is a vertical line
    in the empty gap ``4 < x < 5``.

    Args:
        balanced: Use the balanced variant.
        seed: Seed of the points.

    Returns:
        Points (N, 2), true cluster labels (N,) (0 = left/large cluster) and
        the x of the true separating line (4.5).
    """
    rng = np.random.default_rng(seed)
    if balanced:
        left = rng.uniform([0, 0], [4, 4], size=(500, 2))
        right = rng.uniform([5, 0], [9, 4], size=(500, 2))
    else:
        left = rng.uniform([0, 0], [4, 4], size=(900, 2))
        right = rng.uniform([5, 1.5], [6, 2.5], size=(100, 2))
    points = np.concatenate([left, right])
    labels = np.repeat([0, 1], [len(left), len(right)])
    return points, labels, 4.5


def contingency(true_labels: np.ndarray,
                pred_labels: np.ndarray,
                num_pred: Optional[int] = None) -> np.ndarray:
    """Counts ``table[t, c]`` of points with true label t and cluster c.

    Args:
        true_labels: Int array of shape (N,).
        pred_labels: Int array of shape (N,).
        num_pred: Number of predicted clusters (default: max + 1).

    Returns:
        Int array of shape (T, C).
    """
    true_labels = np.asarray(true_labels)
    pred_labels = np.asarray(pred_labels)
    num_true = int(true_labels.max()) + 1
    num_pred = int(pred_labels.max()) + 1 if num_pred is None else num_pred
    table = np.zeros((num_true, num_pred), dtype=np.int64)
    np.add.at(table, (true_labels, pred_labels), 1)
    return table


# ---------------------------------------------------------------- Fig. 3
def cosine_knn(feats: Tensor,
               k: int,
               queries: Optional[Sequence[int]] = None,
               exclude_self: bool = True,
               chunk_size: int = 1024) -> Tensor:
    """Indices of the k most cosine-similar samples of each query.

    Args:
        feats: Tensor of shape (N, D), the memory bank (and the queries).
        k: Number of neighbours.
        queries: Indices of the queries in ``feats``; default all.
        exclude_self: Never return a query as its own neighbour.
        chunk_size: Queries per similarity block.

    Returns:
        Long tensor of shape (Q, k), most similar first.
    """
    num = len(feats)
    if not 1 <= k <= num - int(exclude_self):
        raise ValueError(f'k must be in [1, {num - int(exclude_self)}] for '
                         f'{num} samples, got {k}.')
    bank = F.normalize(feats.float(), dim=1)
    queries = torch.arange(num) if queries is None else torch.as_tensor(
        queries, dtype=torch.long)
    out = []
    for start in range(0, len(queries), chunk_size):
        idx = queries[start:start + chunk_size]
        sim = bank[idx] @ bank.T
        if exclude_self:
            sim[torch.arange(len(idx)), idx] = -float('inf')
        out.append(sim.topk(k, dim=1).indices)
    return torch.cat(out) if out else torch.zeros(0, k, dtype=torch.long)


def neighbor_agreement(neighbors: Tensor,
                       labels: np.ndarray,
                       queries: Optional[Sequence[int]] = None) -> float:
    """Fraction of (query, neighbour) pairs that share the label.

    Args:
        neighbors: Long tensor of shape (Q, k), from :func:`cosine_knn`.
        labels: Int array of shape (N,).
        queries: Indices of the Q queries; default ``0..Q-1``.

    Returns:
        A float in [0, 1].
    """
    labels = np.asarray(labels)
    nbr = np.asarray(neighbors)
    queries = np.arange(len(nbr)) if queries is None else np.asarray(queries)
    return float((labels[nbr] == labels[queries][:, None]).mean())


def chance_agreement(labels: np.ndarray) -> float:
    """Agreement expected from random neighbours (no self):
    ``sum_c n_c (n_c - 1) / (N (N - 1))``.

    Args:
        labels: Int array of shape (N,), N >= 2.

    Returns:
        A float in [0, 1].
    """
    counts = np.bincount(np.asarray(labels)).astype(np.float64)
    num = counts.sum()
    return float((counts * (counts - 1)).sum() / (num * (num - 1)))


# ---------------------------------------------------------------- Figs. 2/4
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


# ---------------------------------------------------------------- plotting
def save_image_grid(rows: List[List[np.ndarray]],
                    out_file: str,
                    row_titles: Optional[Sequence[str]] = None,
                    cell_titles: Optional[List[List[str]]] = None,
                    cell_colors: Optional[List[List[str]]] = None,
                    title: Optional[str] = None,
                    cell_inches: float = 1.1) -> str:
    """Write a PNG grid of images (rows may differ in length).

    Args:
        rows: Rows of (H, W, 3) uint8 images.
        out_file: PNG path.
        row_titles: One label per row (left of the row).
        cell_titles: Per-image captions, same layout as ``rows``.
        cell_colors: Per-caption colours, same layout as ``rows``.
        title: Figure title.
        cell_inches: Size of one cell in inches.

    Returns:
        ``out_file``.
    """
    num_rows = max(len(rows), 1)
    num_cols = max([len(r) for r in rows] + [1])
    fig = Figure(
        figsize=(cell_inches * num_cols + 0.8, cell_inches * num_rows + 0.6),
        dpi=100)
    canvas = FigureCanvasAgg(fig)
    axes = fig.subplots(num_rows, num_cols, squeeze=False)
    for r, ax_row in enumerate(axes):
        for c, ax in enumerate(ax_row):
            ax.set_xticks([])
            ax.set_yticks([])
            if r >= len(rows) or c >= len(rows[r]):
                ax.axis('off')
                continue
            ax.imshow(rows[r][c], interpolation='nearest')
            if cell_titles is not None:
                color = cell_colors[r][c] if cell_colors else 'black'
                ax.set_title(cell_titles[r][c], fontsize=7, color=color, pad=2)
            if c == 0 and row_titles is not None:
                ax.set_ylabel(row_titles[r], fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    canvas.print_png(out_file)
    return out_file
