"""Datasets, samplers and transforms."""
from . import samplers, transforms  # noqa: F401
from .power_law_overlay import PowerLawOverlayDataset, power_law_probs

__all__ = ['PowerLawOverlayDataset', 'power_law_probs']
