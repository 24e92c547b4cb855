"""Loops (registered in mmpretrain's ``LOOPS``)."""
from .feature_val_loop import FeatureValLoop

__all__ = ['FeatureValLoop']
