"""The rank-probability plot (matplotlib) that ``PrototypeUsageHook`` draws.

Not imported by ``import pmsn_mm`` (it pulls in matplotlib); the hook imports
it when it draws. The analysis tools' figures (image grids, nearest-neighbour
grids, assignment curves) live beside them in ``tools/analysis_tools/``.
"""
from .rank_probability import plot_rank_probability

__all__ = ['plot_rank_probability']
