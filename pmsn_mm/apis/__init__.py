"""Helpers for the analysis tools: load a checkpoint, extract features and
the pure functions behind the paper's figures.

Not imported by ``pmsn_mm/__init__.py`` (it pulls in tqdm and the tools'
plotting); use ``import pmsn_mm.apis``.
"""
from .analysis import (chance_agreement, contingency, cosine_knn,
                       neighbor_agreement, save_image_grid,
                       top_samples_per_prototype, two_clusters, usage_counts)
from .inference import (build_dataset, cluster_prior, dataset_config,
                        dataset_labels, extract_features, load_image,
                        load_model, neck_embeddings, prior_probabilities,
                        prototype_matrix, prototype_probabilities)

__all__ = [
    'build_dataset', 'chance_agreement', 'cluster_prior', 'contingency',
    'cosine_knn',
    'dataset_config', 'dataset_labels', 'extract_features', 'load_image',
    'load_model', 'neck_embeddings', 'neighbor_agreement',
    'prior_probabilities', 'prototype_matrix', 'prototype_probabilities',
    'save_image_grid', 'top_samples_per_prototype', 'two_clusters',
    'usage_counts'
]
