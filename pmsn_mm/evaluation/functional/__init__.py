"""Pure functions on frozen features and prototype probabilities (the
features themselves, which run a model, come from
:func:`pmsn_mm.evaluation.extract_features`).

``logistic_regression`` (scikit-learn) is not imported here: import
``pmsn_mm.evaluation.functional.logistic_regression`` where it is needed.
"""
from .knn import cosine_topk, knn_top1, weighted_knn_scores
from .prior_diagnostics import (effective_num_clusters, prior_diagnostics,
                                sorted_probabilities, usage_counts)

__all__ = [
    'cosine_topk', 'knn_top1', 'weighted_knn_scores', 'effective_num_clusters',
    'prior_diagnostics', 'sorted_probabilities', 'usage_counts'
]
