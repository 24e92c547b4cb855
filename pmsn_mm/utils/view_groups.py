"""One group of SSL views: its settings, their defaults and their checks.

A view group is ``num_views`` random resized crops of one output ``size``
with the same augmentations. The device pre-processor
(``BatchAugmentPreprocessor(views=[...])``) draws them, the loader's reduced
decode (``LoadImageForViews(views=[...])``) reads their crops to decide how
far a JPEG may shrink, and the recipe checker (:mod:`pmsn_mm.recipes`)
reads them back as the ``views.<i>.<setting>`` rows of the recipe tables.
All three read the groups through :func:`check_view_groups`, so a setting
added here is known (and checked) everywhere. Models and datasets may both
import this module (they do not import each other).
"""
from typing import List, Optional, Sequence, Tuple

from .validation import (check_int, check_number, check_probability,
                         check_range_pair)

#: Settings of one group of views and their defaults (no augmentation
#: beyond the crop unless asked for).
VIEW_DEFAULTS = dict(
    num_views=1,
    size=None,
    scale=(0.08, 1.0),
    ratio=(3. / 4., 4. / 3.),
    flip_prob=0.5,
    jitter_prob=0.0,
    brightness=0.0,
    contrast=0.0,
    saturation=0.0,
    hue=0.0,
    grayscale_prob=0.0,
    blur_prob=0.0,
    blur_sigma=(0.1, 2.0),
    solarize_prob=0.0,
    solarize_threshold=128.0)


def check_view_group(group: dict, where: str = 'views') -> dict:
    """A view group with defaults filled in and every setting checked.

    Args:
        group: Settings of :data:`VIEW_DEFAULTS` (unknown keys refused).
        where: Name of the group for messages, e.g. ``'views[2]'``.

    Returns:
        The complete settings dict.
    """
    unknown = sorted(set(group) - set(VIEW_DEFAULTS))
    if unknown:
        raise ValueError(f'{where} has unknown keys {unknown}; valid keys: '
                         f'{", ".join(VIEW_DEFAULTS)}.')
    out = dict(VIEW_DEFAULTS, **group)
    out['num_views'] = check_int(f'{where} num_views', out['num_views'], 1)
    if out['size'] is not None:  # None: the input side
        out['size'] = check_int(f'{where} size', out['size'], 1)
    out['scale'] = check_range_pair(f'{where} scale', out['scale'], 0.0, 1.0,
                                    low_open=True)
    out['ratio'] = check_range_pair(f'{where} ratio', out['ratio'], 0.0,
                                    low_open=True)
    out['blur_sigma'] = check_range_pair(f'{where} blur_sigma',
                                         out['blur_sigma'], 0.0,
                                         low_open=True)
    for name in ('flip_prob', 'jitter_prob', 'grayscale_prob', 'blur_prob',
                 'solarize_prob'):
        out[name] = check_probability(f'{where} {name}', out[name])
    for name in ('brightness', 'contrast', 'saturation'):
        out[name] = check_number(f'{where} {name}', out[name], 0.0)
    out['hue'] = check_number(f'{where} hue', out['hue'], 0.0, 0.5)
    out['solarize_threshold'] = check_number(f'{where} solarize_threshold',
                                             out['solarize_threshold'])
    return out


def check_view_groups(views: Sequence[dict],
                      where: str = 'views') -> List[dict]:
    """Every group of ``views`` checked (:func:`check_view_group`).

    Args:
        views: One dict of settings per group.
        where: Name of the list for messages (groups are ``where[i]``).

    Returns:
        The complete settings of each group, in order.

    Raises:
        ValueError: If ``views`` holds no group or a group is invalid.
    """
    if not views:
        raise ValueError(f'{where} must hold at least one view group.')
    return [
        check_view_group(dict(group), f'{where}[{i}]')
        for i, group in enumerate(views)
    ]


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
