"""Necks: MSN projector and linear-probe feature necks (VICReg uses
mmpretrain's ``NonLinearNeck``)."""
from .linear_probe_necks import AdaptivePoolNeck, ConcatCLSNeck
from .msn_projector import MSNProjector

__all__ = ['AdaptivePoolNeck', 'ConcatCLSNeck', 'MSNProjector']
