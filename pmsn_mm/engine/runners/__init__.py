"""Loops (registered in mmpretrain's ``LOOPS``)."""
from .feature_loops import FeatureLoopMixin, FeatureTestLoop, FeatureValLoop

__all__ = ['FeatureLoopMixin', 'FeatureValLoop', 'FeatureTestLoop']
