"""Self-supervised algorithms."""
from .pmsn import PMSN

__all__ = ['PMSN']
