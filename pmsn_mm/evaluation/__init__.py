"""Evaluation: kNN and other metrics on frozen features."""
from .functional import knn_top1, weighted_knn_scores

__all__ = ['knn_top1', 'weighted_knn_scores']
