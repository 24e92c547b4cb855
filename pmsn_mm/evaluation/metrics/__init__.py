"""Metrics registered in mmpretrain's ``METRICS`` (and, in
:mod:`~pmsn_mm.evaluation.metrics.frozen_features`, the frozen-feature loops
registered in ``LOOPS`` that feed them)."""
from .frozen_features import (FeatureTestLoop, FeatureValLoop,
                              FrozenFeatureMetric, KNNAccuracy)
from .logistic_regression_accuracy import LogisticRegressionAccuracy
from .msn_logistic_accuracy import MSNLogisticRegressionAccuracy
from .multi_head_accuracy import MultiHeadAccuracy

__all__ = ['FeatureValLoop', 'FeatureTestLoop', 'FrozenFeatureMetric',
           'KNNAccuracy',
           'LogisticRegressionAccuracy', 'MSNLogisticRegressionAccuracy',
           'MultiHeadAccuracy']
