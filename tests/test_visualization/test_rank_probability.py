"""plot_rank_probability: a PNG and an RGB image of the sorted p̄."""
import numpy as np
import torch

from pmsn_mm.visualization import plot_rank_probability

PNG_HEADER = b'\x89PNG\r\n\x1a\n'


def test_plot_rank_probability_writes_png(tmp_path):
    out = tmp_path / 'usage.png'
    p = torch.tensor([0.7, 0.2, 0.1, 0.0])  # a 0 entry cannot be drawn
    image = plot_rank_probability(
        p, torch.full((4, ), 0.25), str(out), title='t')
    data = out.read_bytes()
    assert data[:8] == PNG_HEADER and len(data) > 1000
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.std() > 0  # something was drawn


def test_plot_rank_probability_without_file():
    image = plot_rank_probability(
        torch.tensor([.5, .5]), torch.tensor([.5, .5]))
    assert image.shape[0] > 100 and image.shape[1] > 100
