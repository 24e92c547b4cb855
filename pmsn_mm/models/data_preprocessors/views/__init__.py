"""The view augmentations of ``BatchAugmentPreprocessor`` on the device,
one unit each: the random numbers each reads and how it applies itself to
a batch of views. Each subclasses its settings unit of :mod:`pmsn_mm.views`;
:data:`AUGMENTS` lists them in the order of :data:`pmsn_mm.views.SETTINGS`.
A new augmentation is its settings unit in ``pmsn_mm/views/`` and its
device unit here, each listed once.
"""
from typing import Sequence, Tuple

from .base import ViewAugment, ViewDraws, device_constant
from .blur import GaussianBlurView, box_blur_radius, gaussian_blur
from .color_jitter import (LUMA, ColorJitterView, color_jitter, color_params,
                           rotate_hue)
from .crop import CropResizeFlip, crop_corners, crop_resize, replicate_edges
from .grayscale import Grayscale, random_grayscale
from .solarize import Solarize, solarize

#: The augmentations of a view group, in order; each subclasses the unit
#: of :data:`pmsn_mm.views.SETTINGS` in its place.
AUGMENTS: Tuple[ViewAugment, ...] = (CropResizeFlip(), ColorJitterView(),
                                     Grayscale(), GaussianBlurView(),
                                     Solarize())


def draw_width(augments: Sequence[ViewAugment] = AUGMENTS) -> int:
    """Columns of a group's shared uniform draw: one past the last column
    an augmentation reads (their columns must not overlap).

    Args:
        augments: The augmentations. Defaults to :data:`AUGMENTS`.
    """
    columns = [c for aug in augments for c in aug.columns]
    if len(set(columns)) != len(columns):
        layout = [(type(a).__name__, a.columns) for a in augments]
        raise ValueError('view augmentations read overlapping columns of '
                         f'the shared draw: {layout}')
    return 1 + max(columns, default=-1)


#: :func:`draw_width` of :data:`AUGMENTS`.
DRAW_WIDTH: int = draw_width()

__all__ = [
    'AUGMENTS', 'ColorJitterView', 'CropResizeFlip', 'DRAW_WIDTH',
    'GaussianBlurView', 'Grayscale', 'LUMA', 'Solarize',
    'ViewAugment', 'ViewDraws', 'box_blur_radius', 'color_jitter',
    'color_params', 'crop_corners', 'crop_resize', 'device_constant',
    'draw_width', 'gaussian_blur', 'random_grayscale', 'replicate_edges',
    'rotate_hue', 'solarize'
]
