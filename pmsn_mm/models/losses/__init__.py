"""Losses: PMSN (MSN with an arbitrary cluster prior), PSwAV (SwAV with
prior-matched codes) and VICReg."""
from .pmsn_loss import (PMSNLoss, entropy, global_mean_usage, kl_divergence,
                        sharpen)
from .pswav_loss import PSwAVLoss
from .vicreg_loss import VICRegLoss

__all__ = [
    'PMSNLoss', 'PSwAVLoss', 'entropy', 'global_mean_usage', 'kl_divergence',
    'sharpen', 'VICRegLoss'
]
