"""Class-aware data samplers (registered in mmpretrain's ``DATA_SAMPLERS``)."""
from .batch_size_check import sync_sampler_batch_size, takes_batch_size
from .class_frequency_sampler import (ClassFrequencySampler,
                                      class_frequency_probs,
                                      frequency_epoch_indices)
from .class_aware_sampler import ClassAwareSampler
from .class_stratified_sampler import (ClassStratifiedBatchSampler,
                                       ClassStratifiedSampler,
                                       stratified_epoch_indices)
from .utils import get_dataset_labels

__all__ = [
    'ClassAwareSampler', 'ClassStratifiedBatchSampler',
    'ClassStratifiedSampler', 'ClassFrequencySampler',
    'stratified_epoch_indices', 'frequency_epoch_indices',
    'class_frequency_probs', 'get_dataset_labels', 'sync_sampler_batch_size',
    'takes_batch_size'
]
