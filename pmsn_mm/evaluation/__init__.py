"""Evaluation: kNN, logistic regression and probe metrics."""
from . import metrics  # noqa: F401
from .functional import knn_top1, weighted_knn_scores
from .functional.logistic_regression import (LogisticEvalResult,
                                             select_and_evaluate,
                                             select_regularization)

__all__ = [
    'knn_top1', 'weighted_knn_scores', 'LogisticEvalResult',
    'select_and_evaluate', 'select_regularization'
]
