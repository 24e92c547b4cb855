"""Evaluation: kNN, logistic-regression and probe metrics, the loops and
functions that extract frozen features for them, and the pure functions
behind them (scikit-learn is imported only when a logistic regression is
fit). The kNN benchmark's path, in three files, is described at the top of
:mod:`pmsn_mm.evaluation.metrics.frozen_features`."""
from . import metrics  # noqa: F401
from .functional import knn_top1, weighted_knn_scores
from .metrics.frozen_features import (FeatureTestLoop, FeatureValLoop,
                                      batch_features, extract_features,
                                      sample_label)

__all__ = [
    'FeatureValLoop', 'FeatureTestLoop', 'batch_features', 'extract_features',
    'knn_top1', 'sample_label', 'weighted_knn_scores'
]
