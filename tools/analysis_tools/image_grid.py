"""A PNG grid of images (nearest neighbours, prototype galleries), drawn
with matplotlib's Agg canvas (no pyplot state): the analysis tools beside it
draw with it."""
from typing import List, Optional, Sequence, Tuple

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch


def save_image_grid(rows: List[List[np.ndarray]],
                    out_file: str,
                    row_titles: Optional[Sequence[str]] = None,
                    cell_titles: Optional[List[List[str]]] = None,
                    cell_colors: Optional[List[List[str]]] = None,
                    title: Optional[str] = None,
                    cell_inches: float = 1.1,
                    legend: Optional[Sequence[Tuple[str, str]]] = None,
                    col_titles: Optional[Sequence[str]] = None) -> str:
    """Write a PNG grid of images (rows may differ in length).

    Args:
        rows: Rows of (H, W, 3) uint8 images.
        out_file: PNG path.
        row_titles: One label per row (left of the row).
        cell_titles: Per-image captions, same layout as ``rows``.
        cell_colors: Per-caption colours, same layout as ``rows``.
        title: Figure title.
        cell_inches: Size of one cell in inches.
        legend: ``(text, colour)`` pairs explaining the caption colours,
            drawn as a legend under the grid.
        col_titles: One header per column, above the first row.

    Returns:
        ``out_file``.
    """
    num_rows = max(len(rows), 1)
    num_cols = max([len(r) for r in rows] + [1])
    extra = 0.35 * bool(legend) + 0.2 * bool(col_titles)
    fig = Figure(
        figsize=(cell_inches * num_cols + 0.8,
                 cell_inches * num_rows + 0.6 + extra),
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
            if r == 0 and col_titles is not None and c < len(col_titles):
                ax.annotate(col_titles[c], (0.5, 1.0), xytext=(0, 22),
                            xycoords='axes fraction',
                            textcoords='offset points', ha='center',
                            fontsize=7, fontweight='bold')
    if title:
        fig.suptitle(title, fontsize=9)
    rect: Tuple[float, float, float, float] = (0, 0, 1, 1)
    if legend:
        fig.legend(handles=[Patch(color=color, label=text)
                            for text, color in legend],
                   loc='lower center', ncol=len(legend), fontsize=7,
                   frameon=False)
        rect = (0, 0.35 / fig.get_figheight(), 1, 1)
    fig.tight_layout(rect=rect)
    canvas.print_png(out_file)
    return out_file
