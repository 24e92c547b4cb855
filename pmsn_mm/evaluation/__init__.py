"""Evaluation: kNN and probe metrics, and the pure functions behind them.

The scikit-learn logistic regression of the low-shot benchmarks is in
``pmsn_mm.evaluation.functional.logistic_regression`` (not imported here).
"""
from . import metrics  # noqa: F401
from .functional import knn_top1, weighted_knn_scores

__all__ = ['knn_top1', 'weighted_knn_scores']
