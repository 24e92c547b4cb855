"""Paper Fig. 3's figure: reference images and their nearest neighbours in
embedding space, coloured by whether a neighbour shares the reference's
label: what ``nearest_neighbors.py`` and ``prior_toy_study.py`` beside it
draw."""
from typing import List, Optional, Tuple

import numpy as np
from image_grid import save_image_grid


def neighbor_legend(label: Optional[str],
                    reference: str = 'reference') -> List[Tuple[str, str]]:
    """What the caption colours mean.

    Args:
        label: The compared label's name (``digit``); None: nothing is
            compared.
        reference: What the first column is called.
    """
    if label is None:
        return [(f'{reference} image', 'black')]
    return [(f'{reference} (first column)', 'black'),
            (f'neighbour with the same {label}', 'green'),
            (f'neighbour with another {label}', 'red')]


def save_neighbor_grid(rows: List[List[np.ndarray]],
                       captions: List[List[str]],
                       same: Optional[List[List[bool]]],
                       out_file: str,
                       title: str,
                       label: Optional[str] = None,
                       reference: str = 'reference',
                       cell_inches: float = 1.1) -> str:
    """One row per reference image (first column), then its neighbours,
    nearest first; a neighbour's caption is green where it shares the
    reference's ``label``, red where not; a legend under the grid.

    Args:
        rows: Per reference: its image, then its neighbours' images.
        captions: The cells' captions, shaped like ``rows``.
        same: Per reference: whether each neighbour shares its label
            (None: no label is compared, the neighbours are green).
        out_file: The PNG to write.
        title: The figure's title.
        label: The compared label's name, for the legend.
        reference: What the first column is called.
        cell_inches: Size of one cell.

    Returns:
        ``out_file``.
    """
    colors = [['black'] + (['green'] * (len(row) - 1) if same is None else
                           ['green' if s else 'red' for s in same[r]])
              for r, row in enumerate(rows)]
    k = max(len(row) for row in rows) - 1
    return save_image_grid(
        rows, out_file, cell_titles=captions, cell_colors=colors,
        title=title, cell_inches=cell_inches,
        legend=neighbor_legend(label if same is not None else None,
                               reference),
        col_titles=[reference] + [f'#{j}' for j in range(1, k + 1)])
