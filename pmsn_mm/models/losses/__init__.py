"""Losses: PMSN (MSN with an arbitrary cluster prior) and VICReg."""
from .pmsn_loss import (PMSNLoss, entropy, kl_divergence,
                        prototype_log_probabilities, sharpen)
from .vicreg_loss import VICRegLoss

__all__ = [
    'PMSNLoss', 'entropy', 'kl_divergence', 'prototype_log_probabilities',
    'sharpen', 'VICRegLoss'
]
