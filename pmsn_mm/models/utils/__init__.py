"""Model utilities: differentiable collectives, Sinkhorn-Knopp, patch-drop,
the EMA target encoder, functions of probability vectors (KL, entropy,
sharpening), pooling and AMP upcasting. The views of a batch are
:mod:`pmsn_mm.models.data_preprocessors`."""
from .amp import autocast_off, upcast
from .compile import update_params_eagerly
from .dist import all_gather_with_grad, all_reduce_mean_with_grad
from .distributions import entropy, global_mean_usage, kl_divergence, sharpen
from .ema import EMATargetMixin, LinearMomentumEMA
from .patch_drop import (PatchDrop, check_mask_ratio, drop_patch_tokens,
                         num_kept_tokens, random_keep_indices)
from .pooling import last_output, pooled
from .sinkhorn import check_col_marginal, distributed_sinkhorn

__all__ = [
    'EMATargetMixin', 'LinearMomentumEMA',
    'PatchDrop', 'all_gather_with_grad', 'all_reduce_mean_with_grad',
    'autocast_off', 'check_col_marginal', 'check_mask_ratio',
    'distributed_sinkhorn', 'drop_patch_tokens', 'entropy',
    'global_mean_usage', 'kl_divergence', 'last_output', 'num_kept_tokens',
    'pooled', 'random_keep_indices', 'sharpen', 'update_params_eagerly',
    'upcast'
]
