"""Necks: MSN projector, VICReg expander, linear-probe feature necks."""
from .linear_probe_necks import AdaptivePoolNeck, ConcatCLSNeck
from .msn_projector import MSNProjector
from .vicreg_expander import VICRegExpander

__all__ = [
    'AdaptivePoolNeck', 'ConcatCLSNeck', 'MSNProjector', 'VICRegExpander'
]
