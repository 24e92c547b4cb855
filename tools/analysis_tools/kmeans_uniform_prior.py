"""Paper Fig. 1: K-means prefers equal-size clusters.

On 2-D data with a large (900 points) and a small (100 points) cluster, well
separated along x, K-means (K=2) cuts the large cluster in two instead of
separating the true clusters; with ``--balanced`` (500 + 500 points) it
recovers them. Writes ``kmeans_{imbalanced,balanced}.png`` (colour = K-means
cluster, dotted line = true separation) and ``.json`` (the counts) into
``--out-dir`` and prints how K-means splits each true cluster.

Examples:
    python tools/analysis_tools/kmeans_uniform_prior.py --out-dir work_dirs/k
    python tools/analysis_tools/kmeans_uniform_prior.py --balanced
"""
import argparse
import json
import os
import os.path as osp
from typing import Dict, List, Optional, Tuple

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from sklearn.cluster import KMeans


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


COLORS = ('tab:green', 'tab:red', 'tab:blue', 'tab:orange', 'tab:purple')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='K-means on imbalanced vs balanced 2-D clusters '
        '(paper Fig. 1)')
    parser.add_argument(
        '--out-dir',
        default='work_dirs/kmeans_uniform_prior',
        help='folder for the PNG and JSON')
    parser.add_argument(
        '--balanced',
        action='store_true',
        help='two equal clusters (500 + 500) instead of 900 + 100')
    parser.add_argument('--k', type=int, default=2, help='K-means clusters')
    parser.add_argument(
        '--seed', type=int, default=0, help='data/K-means seed')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> Dict:
    """Run the tool; returns the report that is also saved as JSON."""
    args = parse_args(argv)
    points, labels, sep_x = two_clusters(args.balanced, args.seed)
    kmeans = KMeans(n_clusters=args.k, n_init=10, random_state=args.seed)
    pred = kmeans.fit_predict(points)
    table = contingency(labels, pred, args.k)
    name = 'balanced' if args.balanced else 'imbalanced'

    os.makedirs(args.out_dir, exist_ok=True)
    fig = Figure(figsize=(5, 4), dpi=100)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for c in range(args.k):
        keep = pred == c
        ax.scatter(
            points[keep, 0],
            points[keep, 1],
            s=6,
            color=COLORS[c % len(COLORS)],
            label=f'K-means cluster {c} ({int(keep.sum())})')
    ax.axvline(sep_x, color='black', linestyle=':', label='true separation')
    ax.set_aspect('equal')
    ax.legend(fontsize=7, loc='upper right')
    ax.set_title(
        f'K-means (K={args.k}), {name} clusters '
        f'{table.sum(axis=1).tolist()}',
        fontsize=9)
    fig.tight_layout()
    png = osp.join(args.out_dir, f'kmeans_{name}.png')
    canvas.print_png(png)

    report = dict(
        data=name,
        seed=args.seed,
        true_sizes=table.sum(axis=1).tolist(),
        kmeans_sizes=table.sum(axis=0).tolist(),
        # counts[t][c]: points of true cluster t in K-means cluster c
        counts=table.tolist(),
        png=png)
    with open(osp.join(args.out_dir, f'kmeans_{name}.json'), 'w') as f:
        json.dump(report, f, indent=2)
    for t, row in enumerate(table):
        side = 'left' if t == 0 else 'right'
        print(f'true cluster {t} ({side}, {int(row.sum())} points) -> ' +
              ', '.join(f'K-means {c}: {int(n)}' for c, n in enumerate(row)))
    print(f'K-means cluster sizes {report["kmeans_sizes"]} vs true sizes '
          f'{report["true_sizes"]}; figure: {png}')
    return report


if __name__ == '__main__':
    main()
