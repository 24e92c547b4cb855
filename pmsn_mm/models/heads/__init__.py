"""Heads: the PMSN prototype head."""
from .pmsn_head import PMSNHead

__all__ = ['PMSNHead']
