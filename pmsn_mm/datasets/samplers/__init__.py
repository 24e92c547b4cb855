"""Class-aware data samplers (registered in mmpretrain's ``DATA_SAMPLERS``)."""
from .class_frequency_sampler import (ClassFrequencySampler,
                                      class_frequency_probs,
                                      frequency_epoch_indices)
from .class_stratified_sampler import (ClassStratifiedSampler,
                                       stratified_epoch_indices)
from .utils import get_dataset_labels

__all__ = [
    'ClassStratifiedSampler', 'ClassFrequencySampler',
    'stratified_epoch_indices', 'frequency_epoch_indices',
    'class_frequency_probs', 'get_dataset_labels'
]
