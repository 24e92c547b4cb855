"""Model utilities: differentiable collectives, Sinkhorn-Knopp, patch-drop,
the EMA target encoder, batched view augmentation, functions of probability
vectors (KL, entropy, sharpening), pooling and AMP upcasting."""
from .amp import autocast_off, upcast
from .batch_augment import (color_jitter, gaussian_blur, random_grayscale,
                            replicate_edges, resized_crop_flip,
                            sample_color_params, sample_crop_boxes, solarize)
from .batch_augment_preprocessor import BatchAugmentPreprocessor
from .batch_cast_preprocessor import BatchCastPreprocessor, cast_batch
from .compile import EagerUpdateTrainStepMixin, update_params_eagerly
from .dist import all_gather_with_grad, all_reduce_mean_with_grad
from .distributions import entropy, global_mean_usage, kl_divergence, sharpen
from .ema import EMATargetMixin, LinearMomentumEMA
from .patch_drop import (PatchDrop, check_mask_ratio, drop_patch_tokens,
                         num_kept_tokens, random_keep_indices)
from .pooling import last_output, pooled
from .sinkhorn import check_col_marginal, distributed_sinkhorn

__all__ = [
    'BatchAugmentPreprocessor', 'BatchCastPreprocessor', 'cast_batch',
    'EMATargetMixin',
    'EagerUpdateTrainStepMixin', 'update_params_eagerly', 'LinearMomentumEMA',
    'PatchDrop', 'all_gather_with_grad', 'all_reduce_mean_with_grad',
    'autocast_off',
    'check_col_marginal', 'check_mask_ratio', 'color_jitter',
    'distributed_sinkhorn', 'drop_patch_tokens', 'entropy', 'gaussian_blur',
    'global_mean_usage', 'kl_divergence', 'last_output', 'num_kept_tokens',
    'pooled', 'random_grayscale', 'random_keep_indices', 'replicate_edges',
    'resized_crop_flip', 'sample_color_params', 'sample_crop_boxes',
    'sharpen', 'solarize', 'upcast'
]
