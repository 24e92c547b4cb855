"""Settings of the random solarize of a view group."""
from typing import Any, Dict, Optional

from ..utils.validation import check_number, check_probability
from .base import ViewSettings, transform_kind


class SolarizeSettings(ViewSettings):
    """Solarize with probability ``solarize_prob`` at ``solarize_threshold``
    (on the [0, 255] scale; not recorded by the recipe tables). A
    per-sample pipeline: ``Solarize`` or ``RandomSolarize``."""

    defaults = dict(solarize_prob=0.0, solarize_threshold=128.0)
    unrecorded = ('solarize_threshold', )  # no recipe sets it

    def check(self, group: Dict[str, Any], where: str) -> Dict[str, Any]:
        return dict(
            solarize_prob=check_probability(f'{where} solarize_prob',
                                            group['solarize_prob']),
            solarize_threshold=check_number(f'{where} solarize_threshold',
                                            group['solarize_threshold']))

    def enabled(self, group: Dict[str, Any]) -> bool:
        return group['solarize_prob'] > 0

    def transform_recipe(self, transform: dict) -> Optional[Dict[str, Any]]:
        if transform_kind(transform) not in ('Solarize', 'RandomSolarize'):
            return None
        return dict(solarize_prob=float(transform.get('prob', 0.5)))
