"""Heads: the prototype heads of PMSN and PSwAV (prototypes and prior) and
the multi linear-probe head."""
from .base_prototype_head import BasePrototypeHead, build_prior
from .multi_linear_probe_head import MultiLinearProbeHead
from .pmsn_head import PMSNHead, prototype_log_probabilities
from .pswav_head import PSwAVHead

__all__ = [
    'BasePrototypeHead', 'MultiLinearProbeHead', 'PMSNHead', 'PSwAVHead',
    'build_prior', 'prototype_log_probabilities'
]
