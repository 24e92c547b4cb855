"""Data pre-processors: the SSL views of a batch drawn on the device
(``BatchAugmentPreprocessor``; its augmentations, one unit each, in
:mod:`.views`) and the batch moved to the device in one non-blocking copy
per tensor (``BatchCastPreprocessor``)."""
from .batch_augment_preprocessor import BatchAugmentPreprocessor
from .batch_cast_preprocessor import BatchCastPreprocessor, cast_batch

__all__ = ['BatchAugmentPreprocessor', 'BatchCastPreprocessor', 'cast_batch']
