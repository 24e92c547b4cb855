"""save_neighbor_grid: neighbours coloured by the compared label, the legend
that says so, one header per column."""
import numpy as np
from PIL import Image

from tests._tools import import_beside_tools

neighbor_grid = import_beside_tools('tools/analysis_tools/neighbor_grid.py')
save_neighbor_grid = neighbor_grid.save_neighbor_grid
neighbor_legend = neighbor_grid.neighbor_legend


def test_legend_names_the_compared_label():
    assert neighbor_legend('digit') == [
        ('reference (first column)', 'black'),
        ('neighbour with the same digit', 'green'),
        ('neighbour with another digit', 'red')]
    assert neighbor_legend(None) == [('reference image', 'black')]
    assert neighbor_legend('class', 'query')[0] == (
        'query (first column)', 'black')


def test_colours_follow_the_label_and_the_png_is_written(tmp_path,
                                                         monkeypatch):
    img = np.full((8, 8, 3), 128, np.uint8)
    rows = [[img] * 3, [img] * 3]
    captions = [['a', 'b', 'c'], ['d', 'e', 'f']]
    seen = {}
    real = neighbor_grid.save_image_grid

    def spy(rows, out_file, **kwargs):
        seen.update(kwargs)
        return real(rows, out_file, **kwargs)

    monkeypatch.setattr(neighbor_grid, 'save_image_grid', spy)
    out = save_neighbor_grid(rows, captions, [[True, False], [False, False]],
                             str(tmp_path / 'nn.png'), 'title', 'digit')
    assert seen['cell_colors'] == [['black', 'green', 'red'],
                                   ['black', 'red', 'red']]
    assert seen['col_titles'] == ['reference', '#1', '#2']
    assert seen['legend'] == neighbor_legend('digit')
    assert Image.open(out).size[0] > 0
    # nothing compared: every neighbour green, the legend only the reference
    save_neighbor_grid(rows, captions, None, str(tmp_path / 'plain.png'),
                       'title', 'digit')
    assert seen['cell_colors'] == [['black', 'green', 'green']] * 2
    assert seen['legend'] == [('reference image', 'black')]
