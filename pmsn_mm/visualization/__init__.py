"""Figures (matplotlib): image grids, nearest-neighbour grids (Fig. 3) and
the rank-probability plot.

Not imported by ``import pmsn_mm`` (it pulls in matplotlib); the hooks and
tools that draw import it when they draw.
"""
from .image_grid import save_image_grid
from .neighbor_grid import save_neighbor_grid
from .rank_probability import plot_rank_probability

__all__ = ['plot_rank_probability', 'save_image_grid', 'save_neighbor_grid']
