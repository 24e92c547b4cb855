"""Settings of the random resized crop + horizontal flip of a view group,
and where a group's crops are smallest (what the loader's reduced decode
reads)."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..utils.validation import check_int, check_probability, check_range_pair
from .base import ViewSettings, transform_kind


class CropSettings(ViewSettings):
    """Random resized crop to ``size``, then a horizontal flip with
    probability ``flip_prob`` (the views of a group start here).

    Settings: ``size`` (None: the input side), ``scale`` (area fraction
    range), ``ratio`` (w / h range), ``flip_prob``; recipe rows add
    ``interpolation``. A per-sample pipeline: mmpretrain's
    ``RandomResizedCrop`` and ``RandomFlip``.
    """

    defaults = dict(size=None, scale=(0.08, 1.0), ratio=(3. / 4., 4. / 3.),
                    flip_prob=0.5)
    recipe_extra = ('interpolation', )
    absent = dict(size=None, scale=None, ratio=None, interpolation=None,
                  flip_prob=0.0)
    #: How the device crops are resized: ``roi_align``'s adaptive sampling,
    #: the mean of ceil(crop / out) bilinear samples per output pixel and
    #: axis (PIL's antialiased bilinear is a triangle filter).
    INTERPOLATION = 'bilinear-roi-average'

    def check(self, group: Dict[str, Any], where: str) -> Dict[str, Any]:
        size = group['size']
        return dict(
            size=None if size is None else check_int(f'{where} size', size,
                                                     1),
            scale=check_range_pair(f'{where} scale', group['scale'], 0.0,
                                   1.0, low_open=True),
            ratio=check_range_pair(f'{where} ratio', group['ratio'], 0.0,
                                   low_open=True),
            flip_prob=check_probability(f'{where} flip_prob',
                                        group['flip_prob']))

    def recipe(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return dict(super().recipe(group), interpolation=self.INTERPOLATION)

    def transform_recipe(self, transform: dict) -> Optional[Dict[str, Any]]:
        kind = transform_kind(transform)
        if kind == 'RandomResizedCrop':
            interp = transform.get('interpolation', 'bilinear')
            if transform.get('backend', 'cv2') == 'pillow':  # antialiased
                interp = f'{interp}-antialias'
            return dict(
                size=transform['scale'],
                scale=list(transform.get('crop_ratio_range', (0.08, 1.0))),
                ratio=list(
                    transform.get('aspect_ratio_range', (3. / 4., 4. / 3.))),
                interpolation=interp)
        if kind == 'RandomFlip':
            return dict(flip_prob=float(transform.get('prob', 0.5)))
        return None


def smallest_crops(
        groups: Sequence[dict]) -> Optional[List[Tuple[float, float, int]]]:
    """Where each group's random resized crop is smallest.

    The short side ``sqrt(s * H * W * min(r, 1 / r))`` is smallest at
    ``s = scale[0]`` and the ratio farthest from 1.

    Args:
        groups: Checked view groups (:func:`pmsn_mm.views.check_view_groups`).

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
