"""Losses: PMSN (MSN with an arbitrary cluster prior)."""
from .pmsn_loss import (PMSNLoss, entropy, kl_divergence,
                        prototype_log_probabilities, sharpen)

__all__ = [
    'PMSNLoss', 'entropy', 'kl_divergence', 'prototype_log_probabilities',
    'sharpen'
]
