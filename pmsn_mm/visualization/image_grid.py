"""A PNG grid of images (nearest neighbours, prototype galleries), drawn
with matplotlib's Agg canvas (no pyplot state)."""
from typing import List, Optional, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


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
