"""Models: algorithms, backbones, necks, heads, losses, cluster priors and
data pre-processors (the views of a batch drawn on the device)."""
from . import (backbones, data_preprocessors, heads, losses,  # noqa: F401
               necks, priors, selfsup, utils)
from .data_preprocessors import (BatchAugmentPreprocessor,
                                 BatchCastPreprocessor, cast_batch)

__all__ = ['BatchAugmentPreprocessor', 'BatchCastPreprocessor', 'cast_batch']
