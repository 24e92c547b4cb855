"""Settings of the random Gaussian blur of a view group."""
from typing import Any, Dict, Optional, Sequence, cast

from ..utils.validation import check_probability, check_range_pair
from .base import ViewSettings, transform_kind


class BlurSettings(ViewSettings):
    """Gaussian blur with probability ``blur_prob``, sigma uniform in
    ``blur_sigma`` (a (low, high) pair > 0; recorded only where the group
    blurs). A per-sample pipeline: mmpretrain's ``GaussianBlur``
    (``magnitude_range``)."""

    defaults = dict(blur_prob=0.0, blur_sigma=(0.1, 2.0))

    def check(self, group: Dict[str, Any], where: str) -> Dict[str, Any]:
        return dict(
            blur_prob=check_probability(f'{where} blur_prob',
                                        group['blur_prob']),
            blur_sigma=check_range_pair(f'{where} blur_sigma',
                                        group['blur_sigma'], 0.0,
                                        low_open=True))

    def enabled(self, group: Dict[str, Any]) -> bool:
        return group['blur_prob'] > 0

    def recipe(self, group: Dict[str, Any]) -> Dict[str, Any]:
        # the range is no setting of a group that never blurs
        return dict(blur_prob=group['blur_prob'],
                    blur_sigma=list(group['blur_sigma'])
                    if group['blur_prob'] else None)

    def transform_recipe(self, transform: dict) -> Optional[Dict[str, Any]]:
        if transform_kind(transform) != 'GaussianBlur':
            return None
        return dict(blur_prob=float(transform.get('prob', 0.5)),
                    blur_sigma=list(
                        cast(Sequence[float],
                             transform.get('magnitude_range'))))
