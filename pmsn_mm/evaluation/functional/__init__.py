from .knn import knn_top1, weighted_knn_scores
from .prior_diagnostics import (effective_num_clusters, plot_rank_probability, prior_diagnostics, sorted_probabilities, update_used_prototypes)  # noqa: E501

__all__ = ['knn_top1', 'weighted_knn_scores']
__all__ += ['effective_num_clusters', 'plot_rank_probability', 'prior_diagnostics', 'sorted_probabilities', 'update_used_prototypes']  # noqa: E501
