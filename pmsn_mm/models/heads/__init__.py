"""Heads: the PMSN prototype head and the multi linear-probe head."""
from .multi_linear_probe_head import MultiLinearProbeHead
from .pmsn_head import PMSNHead, prototype_log_probabilities

__all__ = ['MultiLinearProbeHead', 'PMSNHead', 'prototype_log_probabilities']
