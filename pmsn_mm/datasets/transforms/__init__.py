"""Data transforms (registered in mmpretrain's ``TRANSFORMS`` under their own
names; the variants of mmpretrain's and mmcv's transforms say so in their
names, see docs/openmmlab.md)."""
from .color_jitter import ModuloHueColorJitter, adjust_hue
from .loading import (CheckedLoadImageFromFile, ImageReadError,
                      LoadImageForViews, largest_safe_reduction)

__all__ = [
    'CheckedLoadImageFromFile', 'ImageReadError', 'LoadImageForViews',
    'ModuloHueColorJitter', 'adjust_hue', 'largest_safe_reduction'
]
