"""Metrics registered in mmpretrain's ``METRICS``."""
from .frozen_feature_metric import FrozenFeatureMetric
from .knn_accuracy import KNNAccuracy
from .logistic_regression_accuracy import LogisticRegressionAccuracy
from .msn_logistic_accuracy import MSNLogisticRegressionAccuracy
from .multi_head_accuracy import MultiHeadAccuracy

__all__ = ['FrozenFeatureMetric', 'KNNAccuracy',
           'LogisticRegressionAccuracy', 'MSNLogisticRegressionAccuracy',
           'MultiHeadAccuracy']
