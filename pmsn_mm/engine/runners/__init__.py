"""Loops (registered in mmpretrain's ``LOOPS``)."""
from .feature_loops import FeatureTestLoop, FeatureValLoop, feature_iter

__all__ = ['FeatureValLoop', 'FeatureTestLoop', 'feature_iter']
