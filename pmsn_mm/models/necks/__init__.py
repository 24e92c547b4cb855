"""Necks: the MSN projector."""
from .msn_projector import MSNProjector

__all__ = ['MSNProjector']
