"""Pure functions on frozen features and prototype probabilities.

``logistic_regression`` (scikit-learn) is not imported here: import
``pmsn_mm.evaluation.functional.logistic_regression`` where it is needed.
"""
from .features import (batch_features, extract_features, last_output, pooled,
                       sample_label)
from .knn import (chance_agreement, cosine_knn, cosine_topk, knn_top1,
                  neighbor_agreement, weighted_knn_scores)
from .prior_diagnostics import (effective_num_clusters, prior_diagnostics,
                                sorted_probabilities,
                                top_samples_per_prototype,
                                update_used_prototypes, usage_counts)

__all__ = [
    'batch_features', 'extract_features', 'last_output', 'pooled',
    'sample_label', 'chance_agreement',
    'cosine_knn', 'cosine_topk', 'knn_top1', 'neighbor_agreement',
    'weighted_knn_scores', 'effective_num_clusters', 'prior_diagnostics',
    'sorted_probabilities', 'top_samples_per_prototype',
    'update_used_prototypes', 'usage_counts'
]
