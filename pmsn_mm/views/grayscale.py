"""Settings of the random grayscale of a view group."""
from typing import Any, Dict, Optional

from ..utils.validation import check_probability
from .base import ViewSettings, transform_kind


class GrayscaleSettings(ViewSettings):
    """Grayscale with probability ``grayscale_prob`` (RGB views). A
    per-sample pipeline: mmpretrain's ``RandomGrayscale``."""

    defaults = dict(grayscale_prob=0.0)

    def check(self, group: Dict[str, Any], where: str) -> Dict[str, Any]:
        return dict(grayscale_prob=check_probability(
            f'{where} grayscale_prob', group['grayscale_prob']))

    def enabled(self, group: Dict[str, Any]) -> bool:
        return group['grayscale_prob'] > 0

    def transform_recipe(self, transform: dict) -> Optional[Dict[str, Any]]:
        if transform_kind(transform) != 'RandomGrayscale':
            return None
        return dict(grayscale_prob=float(transform.get('prob', 0.1)))
