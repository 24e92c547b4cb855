"""Self-supervised algorithms."""
from .data2vec import Data2VecVision
from .pmsn import PMSN
from .pswav import PSwAV
from .simclr import SyncFreeSimCLR
from .vicreg import VICReg

__all__ = ['Data2VecVision', 'PMSN', 'PSwAV', 'SyncFreeSimCLR', 'VICReg']
