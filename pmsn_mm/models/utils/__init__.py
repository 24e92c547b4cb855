"""Model utilities: differentiable collectives, Sinkhorn-Knopp, patch-drop,
the EMA target encoder, batched view augmentation."""
from .batch_augment import (color_jitter, gaussian_blur, random_grayscale,
                            replicate_edges, resized_crop_flip,
                            sample_color_params, sample_crop_boxes, solarize)
from .batch_augment_preprocessor import BatchAugmentPreprocessor
from .dist import all_gather_with_grad, all_reduce_mean_with_grad
from .ema import EMATargetMixin, LinearMomentumEMA
from .patch_drop import (PatchDrop, check_mask_ratio, drop_patch_tokens,
                         num_kept_tokens, random_keep_indices)
from .sinkhorn import check_col_marginal, distributed_sinkhorn

__all__ = [
    'BatchAugmentPreprocessor', 'color_jitter', 'gaussian_blur',
    'random_grayscale', 'replicate_edges', 'resized_crop_flip',
    'sample_color_params', 'sample_crop_boxes', 'solarize', 'all_gather_with_grad', 'all_reduce_mean_with_grad',
    'EMATargetMixin', 'LinearMomentumEMA', 'check_col_marginal', 'distributed_sinkhorn',
    'PatchDrop', 'check_mask_ratio', 'drop_patch_tokens', 'num_kept_tokens',
    'random_keep_indices'
]
