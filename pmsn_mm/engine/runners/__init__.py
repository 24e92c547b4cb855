"""Runners (``PMSNRunner``, registered in mmengine's ``RUNNERS``). The
frozen-feature loops (``FeatureValLoop``, ``FeatureTestLoop``) live with the
metric they feed, in :mod:`pmsn_mm.evaluation.metrics.frozen_features`."""
from .pmsn_runner import PMSNRunner

__all__ = ['PMSNRunner']
