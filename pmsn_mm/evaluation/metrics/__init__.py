"""Metrics registered in mmpretrain's ``METRICS``."""
from .knn_accuracy import KNNAccuracy
from .multi_head_accuracy import MultiHeadAccuracy

__all__ = ['KNNAccuracy', 'MultiHeadAccuracy']
