"""save_image_grid: its legend and column headers are drawn."""
import numpy as np
from PIL import Image

from tests._tools import import_beside_tools

save_image_grid = import_beside_tools(
    'tools/analysis_tools/image_grid.py').save_image_grid

GREEN = np.array([0, 128, 0])  # matplotlib's 'green'
RED = np.array([255, 0, 0])


def _count(png, colour, rows=None):
    img = np.asarray(Image.open(png).convert('RGB')).astype(int)
    if rows is not None:
        img = img[rows]
    return int((np.abs(img - colour).sum(axis=-1) <= 6).sum())


def test_legend_patches_are_drawn_below_the_grid(tmp_path):
    grey = [[np.full((8, 8, 3), 128, np.uint8)] * 3] * 2
    plain = save_image_grid(grey, str(tmp_path / 'plain.png'),
                            cell_titles=[['a', 'b', 'c']] * 2)
    legend = save_image_grid(
        grey, str(tmp_path / 'legend.png'),
        cell_titles=[['a', 'b', 'c']] * 2,
        legend=[('same', 'green'), ('other', 'red')],
        col_titles=['reference', '#1', '#2'])
    h_plain = Image.open(plain).size[1]
    h_legend = Image.open(legend).size[1]
    assert h_legend > h_plain  # room for the legend and the headers
    # no caption is coloured, so green and red pixels are the legend's
    # patches, in the bottom strip of the figure
    assert _count(plain, GREEN) == 0 and _count(plain, RED) == 0
    bottom = slice(h_legend - 40, h_legend)
    assert _count(legend, GREEN, bottom) > 20
    assert _count(legend, RED, bottom) > 20
    assert _count(legend, GREEN) == _count(legend, GREEN, bottom)
