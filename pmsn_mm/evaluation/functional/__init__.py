from .features import batch_features, last_output, pooled
from .knn import knn_top1, weighted_knn_scores
from .prior_diagnostics import (effective_num_clusters, plot_rank_probability,
                                prior_diagnostics, sorted_probabilities,
                                update_used_prototypes)

__all__ = [
    'batch_features', 'last_output', 'pooled', 'knn_top1',
    'weighted_knn_scores', 'effective_num_clusters', 'plot_rank_probability',
    'prior_diagnostics', 'sorted_probabilities', 'update_used_prototypes'
]
