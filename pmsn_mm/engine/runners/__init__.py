"""Runners (``PMSNRunner``, registered in mmengine's ``RUNNERS``) and
loops (registered in mmpretrain's ``LOOPS``)."""
from .feature_loops import FeatureLoopMixin, FeatureTestLoop, FeatureValLoop
from .pmsn_runner import PMSNRunner

__all__ = [
    'FeatureLoopMixin', 'FeatureValLoop', 'FeatureTestLoop', 'PMSNRunner'
]
