"""Helpers for the analysis tools: datasets and prototype probabilities of
a trained model (built with ``mmpretrain.apis.get_model``; features with
``pmsn_mm.evaluation.functional.extract_features``).

Not imported by ``pmsn_mm/__init__.py`` (it pulls in mmcv's image I/O); use
``import pmsn_mm.apis``.
"""
from .inference import (build_dataset, cluster_prior, dataset_config,
                        dataset_labels, load_image, neck_embeddings,
                        prior_probabilities, prototype_matrix,
                        prototype_probabilities)

__all__ = [
    'build_dataset', 'cluster_prior', 'dataset_config', 'dataset_labels',
    'load_image', 'neck_embeddings', 'prior_probabilities',
    'prototype_matrix', 'prototype_probabilities'
]
