"""Datasets, samplers and transforms."""
from . import samplers, transforms  # noqa: F401
from .clevr import CLEVRCount, CLEVRDist, clevr_count_label, clevr_dist_label
from .image_folder import ImageFolderDataset
from .inat18 import INat18, inat18_samples
from .kitti_dist import KITTIDist, kitti_dist_label, kitti_train_test_split
from .knn_eval_dataset import KNNEvalDataset
from .low_shot import (LowShotDataset, list_subset_indices,
                       per_class_subset_indices)
from .padded_collate import padded_collate
from .power_law_overlay import PowerLawOverlayDataset
from .sorted_class_datasets import CIFAR100Sorted, Places205Sorted

__all__ = [
    'PowerLawOverlayDataset', 'CLEVRCount', 'CLEVRDist',
    'clevr_count_label', 'clevr_dist_label', 'INat18', 'inat18_samples',
    'KITTIDist', 'kitti_dist_label', 'kitti_train_test_split',
    'KNNEvalDataset', 'LowShotDataset', 'list_subset_indices',
    'per_class_subset_indices', 'CIFAR100Sorted', 'Places205Sorted',
    'padded_collate', 'ImageFolderDataset'
]
