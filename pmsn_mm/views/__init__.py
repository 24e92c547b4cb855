"""View groups: the settings of the view augmentations, one unit each, and
what a view group is made of. Pure Python (no torch, no models).

A view group is ``num_views`` views of every image with the same augmentations,
whose settings are those of the units in :data:`SETTINGS`. Everything that
reads a group (``BatchAugmentPreprocessor``, ``LoadImageForViews``, the recipe
checker) reads it through :func:`check_view_groups`; a new setting of an
augmentation is an edit of its unit alone.
"""
from typing import Any, Dict, List, Sequence, Tuple

from ..utils.validation import check_int
from .base import ViewSettings, transform_kind
from .blur import BlurSettings
from .color_jitter import (ADJUSTMENTS, HUE_STEPS, JITTER_TYPES, NEUTRAL_COLOR,
                           ColorJitterSettings, jitter_range, rotate_hue_8bit)
from .crop import CropSettings, smallest_crops
from .grayscale import GrayscaleSettings
from .solarize import SolarizeSettings

#: The augmentations of a view group, in order (the crop makes the views).
SETTINGS: Tuple[ViewSettings, ...] = (CropSettings(), ColorJitterSettings(),
                                      GrayscaleSettings(), BlurSettings(),
                                      SolarizeSettings())
#: Settings of the group itself.
GROUP_DEFAULTS: Dict[str, Any] = dict(num_views=1)


def view_defaults(
        augments: Sequence[ViewSettings] = SETTINGS) -> Dict[str, Any]:
    """Every setting of a view group and its default (the group's, then
    each augmentation's; only the crop unless asked for).

    Args:
        augments: The augmentations. Defaults to :data:`SETTINGS`.
    """
    return dict(GROUP_DEFAULTS,
                **{k: v for aug in augments for k, v in aug.defaults.items()})


def view_fields(
        augments: Sequence[ViewSettings] = SETTINGS) -> Tuple[str, ...]:
    """Rows of the recipe tables (``views.<i>.<field>``): the recorded
    settings, then what the augmentations say of how they apply them.

    Args:
        augments: The augmentations. Defaults to :data:`SETTINGS`.
    """
    unrecorded = {k for aug in augments for k in aug.unrecorded}
    return tuple(k for k in view_defaults(augments)
                 if k not in unrecorded) + tuple(
                     f for aug in augments for f in aug.recipe_extra)


#: :func:`view_defaults` of :data:`SETTINGS`.
VIEW_DEFAULTS: Dict[str, Any] = view_defaults()
#: :func:`view_fields` of :data:`SETTINGS`.
VIEW_FIELDS: Tuple[str, ...] = view_fields()


def check_view_group(group: dict, where: str = 'views',
                     augments: Sequence[ViewSettings] = SETTINGS) -> dict:
    """A view group with defaults filled in and every setting checked.

    Args:
        group: Settings of :func:`view_defaults` (unknown keys refused).
        where: Name of the group for messages, e.g. ``'views[2]'``.
        augments: The augmentations. Defaults to :data:`SETTINGS`.

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
                      augments: Sequence[ViewSettings] = SETTINGS
                      ) -> List[dict]:
    """Every group of ``views`` checked (:func:`check_view_group`).

    Args:
        views: One dict of settings per group.
        where: Name of the list for messages (groups are ``where[i]``).
        augments: The augmentations. Defaults to :data:`SETTINGS`.

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


def recipe_fields(group: dict,
                  augments: Sequence[ViewSettings] = SETTINGS
                  ) -> Dict[str, Any]:
    """A checked group as the recipe tables record it (:func:`view_fields`).

    Args:
        group: A checked view group.
        augments: The augmentations. Defaults to :data:`SETTINGS`.
    """
    out: Dict[str, Any] = dict(num_views=group['num_views'])
    for aug in augments:
        out.update(aug.recipe(group))
    return {k: out[k] for k in view_fields(augments)}


def pipeline_recipe_fields(transforms: Sequence[dict],
                           augments: Sequence[ViewSettings] = SETTINGS
                           ) -> Dict[str, Any]:
    """The view a per-sample pipeline draws, as the recipe tables record it
    (:func:`view_fields`; ``num_views`` 1): each augmentation's rows from
    its transforms (later ones win) or, without them, its ``absent_recipe``.

    Args:
        transforms: Transform config dicts, in order (one view's pipeline).
        augments: The augmentations. Defaults to :data:`SETTINGS`.

    Raises:
        ValueError: If a ``RandomApply`` is no augmentation's (unrecorded).
    """
    rows = [aug.absent_recipe() for aug in augments]
    for transform in transforms:
        read = [aug.transform_recipe(transform) for aug in augments]
        for row, got in zip(rows, read):
            row.update(got or {})
        if transform_kind(transform) == 'RandomApply' and all(
                got is None for got in read):
            raise ValueError(f"RandomApply of {transform['transforms']}: "
                             'no view augmentation reads it.')
    out: Dict[str, Any] = dict(GROUP_DEFAULTS)
    for row in rows:
        out.update(row)
    return {k: out[k] for k in view_fields(augments)}


__all__ = [
    'ADJUSTMENTS', 'BlurSettings', 'ColorJitterSettings', 'CropSettings',
    'GROUP_DEFAULTS', 'GrayscaleSettings', 'HUE_STEPS', 'JITTER_TYPES',
    'NEUTRAL_COLOR', 'SETTINGS', 'SolarizeSettings', 'VIEW_DEFAULTS',
    'VIEW_FIELDS', 'ViewSettings', 'check_view_group', 'check_view_groups',
    'jitter_range', 'pipeline_recipe_fields', 'recipe_fields',
    'rotate_hue_8bit', 'smallest_crops', 'transform_kind', 'view_defaults',
    'view_fields'
]
