"""Class-aware data samplers (registered in mmpretrain's ``DATA_SAMPLERS``)."""
from ...utils.labels import get_dataset_labels
from .class_aware_sampler import ClassAwareSampler
from .class_frequency_sampler import (ClassFrequencySampler,
                                      class_frequency_probs,
                                      frequency_epoch_indices)
from .class_stratified_sampler import (ClassStratifiedBatchSampler,
                                       stratified_epoch_indices)

__all__ = [
    'ClassAwareSampler', 'ClassStratifiedBatchSampler',
    'ClassFrequencySampler', 'stratified_epoch_indices',
    'frequency_epoch_indices', 'class_frequency_probs', 'get_dataset_labels'
]
