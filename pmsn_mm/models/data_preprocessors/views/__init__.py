"""The view augmentations of ``BatchAugmentPreprocessor``, one unit each,
and what a view group is made of.

A view group is ``num_views`` views of every image with the same
augmentations; its settings are those of the units in :data:`AUGMENTS`
(each unit declares its own, with defaults and checks, in its file), and
the pre-processor applies the units in this order (its ``augments``).
Everything that reads a group — the pre-processor, the loader's reduced decode
(``LoadImageForViews``) and the recipe checker's ``views.<i>.<field>`` rows
(:data:`VIEW_FIELDS`) — reads it through :func:`check_view_groups`, so a
new augmentation is one new file (a :class:`ViewAugment`) plus one entry in
:data:`AUGMENTS`.
"""
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ....utils.validation import check_int
from .base import ViewAugment, ViewDraws, device_constant
from .blur import GaussianBlurView, box_blur_radius, gaussian_blur
from .color_jitter import (LUMA, NEUTRAL_COLOR, ColorJitterView, color_jitter,
                           color_params, rotate_hue)
from .crop import CropResizeFlip, crop_corners, crop_resize, replicate_edges
from .grayscale import Grayscale, random_grayscale
from .solarize import Solarize, solarize

#: The augmentations of a view group, in the order they are applied (the
#: crop first: it makes the views).
AUGMENTS: Tuple[ViewAugment, ...] = (CropResizeFlip(), ColorJitterView(),
                                     Grayscale(), GaussianBlurView(),
                                     Solarize())
#: Settings of the group itself.
GROUP_DEFAULTS: Dict[str, Any] = dict(num_views=1)


def view_defaults(
        augments: Sequence[ViewAugment] = AUGMENTS) -> Dict[str, Any]:
    """Every setting of a view group and its default: the group's, then
    each augmentation's (no augmentation beyond the crop unless asked
    for)."""
    return dict(GROUP_DEFAULTS,
                **{k: v for aug in augments for k, v in aug.defaults.items()})


def view_fields(
        augments: Sequence[ViewAugment] = AUGMENTS) -> Tuple[str, ...]:
    """Fields of the recipe tables (``views.<i>.<field>``): the recorded
    settings, then what the augmentations say of how they apply them."""
    unrecorded = {k for aug in augments for k in aug.unrecorded}
    return tuple(k for k in view_defaults(augments)
                 if k not in unrecorded) + tuple(
                     f for aug in augments for f in aug.recipe_extra)


def draw_width(augments: Sequence[ViewAugment] = AUGMENTS) -> int:
    """Columns of a group's shared uniform draw: one past the last column
    an augmentation reads (their columns must not overlap)."""
    columns = [c for aug in augments for c in aug.columns]
    if len(set(columns)) != len(columns):
        layout = [(type(a).__name__, a.columns) for a in augments]
        raise ValueError('view augmentations read overlapping columns of '
                         f'the shared draw: {layout}')
    return 1 + max(columns, default=-1)


#: :func:`view_defaults` of :data:`AUGMENTS`.
VIEW_DEFAULTS: Dict[str, Any] = view_defaults()
#: :func:`view_fields` of :data:`AUGMENTS`.
VIEW_FIELDS: Tuple[str, ...] = view_fields()
#: :func:`draw_width` of :data:`AUGMENTS`.
DRAW_WIDTH: int = draw_width()


def check_view_group(group: dict, where: str = 'views',
                     augments: Sequence[ViewAugment] = AUGMENTS) -> dict:
    """A view group with defaults filled in and every setting checked (by
    the augmentation that reads it).

    Args:
        group: Settings of :func:`view_defaults` (unknown keys refused).
        where: Name of the group for messages, e.g. ``'views[2]'``.
        augments: The augmentations. Defaults to :data:`AUGMENTS`.

    Returns:
        The complete settings dict.
    """
    defaults = view_defaults(augments)
    unknown = sorted(set(group) - set(defaults))
    if unknown:
        raise ValueError(f'{where} has unknown keys {unknown}; valid keys: '
                         f'{", ".join(defaults)}.')
    full = dict(defaults, **group)
    out = dict(num_views=check_int(f'{where} num_views', full['num_views'],
                                   1))
    for aug in augments:
        out.update(aug.check(full, where))
    return {k: out[k] for k in defaults}


def check_view_groups(views: Sequence[dict], where: str = 'views',
                      augments: Sequence[ViewAugment] = AUGMENTS
                      ) -> List[dict]:
    """Every group of ``views`` checked (:func:`check_view_group`).

    Args:
        views: One dict of settings per group.
        where: Name of the list for messages (groups are ``where[i]``).
        augments: The augmentations. Defaults to :data:`AUGMENTS`.

    Returns:
        The complete settings of each group, in order.

    Raises:
        ValueError: If ``views`` holds no group or a group is invalid.
    """
    if not views:
        raise ValueError(f'{where} must hold at least one view group.')
    return [
        check_view_group(dict(group), f'{where}[{i}]', augments)
        for i, group in enumerate(views)
    ]


def recipe_fields(group: dict, augments: Sequence[ViewAugment] = AUGMENTS
                  ) -> Dict[str, Any]:
    """A checked group as the recipe tables record it (:func:`view_fields`,
    in that order).

    Args:
        group: A checked view group.
        augments: The augmentations. Defaults to :data:`AUGMENTS`.
    """
    out: Dict[str, Any] = dict(num_views=group['num_views'])
    for aug in augments:
        out.update(aug.recipe(group))
    return {k: out[k] for k in view_fields(augments)}


def smallest_crops(
        groups: Sequence[dict]) -> Optional[List[Tuple[float, float, int]]]:
    """Where each group's random resized crop is smallest.

    A crop of area fraction ``s`` and aspect ratio ``r`` has short side
    ``sqrt(s * H * W * min(r, 1 / r))``: smallest at ``s = scale[0]`` and
    the ratio farthest from 1.

    Args:
        groups: Checked view groups (:func:`check_view_groups`).

    Returns:
        ``(scale_min, min(r, 1 / r) over the ratio range, size)`` per group,
        or None if a group has no ``size`` (its output is the input's side).
    """
    crops = []
    for group in groups:
        if not group['size']:
            return None
        extreme = min(min(r, 1 / r) for r in group['ratio'])
        crops.append((float(group['scale'][0]), extreme, int(group['size'])))
    return crops


__all__ = [
    'AUGMENTS', 'ColorJitterView', 'CropResizeFlip', 'DRAW_WIDTH',
    'GROUP_DEFAULTS', 'GaussianBlurView', 'Grayscale', 'LUMA',
    'NEUTRAL_COLOR', 'Solarize', 'VIEW_DEFAULTS', 'VIEW_FIELDS',
    'ViewAugment', 'ViewDraws', 'box_blur_radius', 'check_view_group',
    'check_view_groups', 'color_jitter', 'color_params', 'crop_corners',
    'crop_resize', 'device_constant', 'draw_width', 'gaussian_blur',
    'random_grayscale', 'recipe_fields', 'replicate_edges', 'rotate_hue',
    'smallest_crops', 'solarize', 'view_defaults', 'view_fields'
]
