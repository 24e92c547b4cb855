"""Data transforms (registered in mmpretrain's ``TRANSFORMS``; the two below
replace mmpretrain's of the same name, see their modules)."""
from .color_jitter import ColorJitter, adjust_hue
from .loading import (ImageReadError, LoadImageForViews, LoadImageFromFile,
                      largest_safe_reduction)

__all__ = [
    'ColorJitter', 'adjust_hue', 'ImageReadError', 'LoadImageFromFile',
    'LoadImageForViews', 'largest_safe_reduction'
]
