"""Evaluation: kNN, logistic-regression and probe metrics, and the pure
functions behind them (scikit-learn is imported only when a logistic
regression is fit)."""
from . import metrics  # noqa: F401
from .functional import knn_top1, weighted_knn_scores

__all__ = ['knn_top1', 'weighted_knn_scores']
