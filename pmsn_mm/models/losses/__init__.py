"""Losses: PMSN (MSN with an arbitrary cluster prior), PSwAV (SwAV with
prior-matched codes) and VICReg; functions of tensors, stateless."""
from .pmsn_loss import PMSNLoss
from .pswav_loss import PSwAVLoss
from .step_stats import PrototypeStepStats
from .vicreg_loss import VICRegLoss

__all__ = ['PMSNLoss', 'PSwAVLoss', 'PrototypeStepStats', 'VICRegLoss']
