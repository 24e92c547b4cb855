"""Data pre-processors: the SSL views of a batch drawn on the device
(``BatchAugmentPreprocessor``, its batched augmentations in
:mod:`.batch_augment`) and the batch moved to the device in one
non-blocking copy per tensor (``BatchCastPreprocessor``). The settings of a
view group are :mod:`pmsn_mm.utils.view_groups`."""
from .batch_augment import (color_jitter, gaussian_blur, random_grayscale,
                            replicate_edges, resized_crop_flip,
                            sample_color_params, sample_crop_boxes, solarize)
from .batch_augment_preprocessor import BatchAugmentPreprocessor
from .batch_cast_preprocessor import BatchCastPreprocessor, cast_batch

__all__ = [
    'BatchAugmentPreprocessor', 'BatchCastPreprocessor', 'cast_batch',
    'color_jitter', 'gaussian_blur', 'random_grayscale', 'replicate_edges',
    'resized_crop_flip', 'sample_color_params', 'sample_crop_boxes',
    'solarize'
]
