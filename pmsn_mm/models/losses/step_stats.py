"""What a prototype loss measured in one step, besides its losses."""
from typing import NamedTuple, Optional

from torch import Tensor


class PrototypeStepStats(NamedTuple):
    """Global-batch (all-rank) statistics of one step of a prototype loss
    (``PMSNLoss``, ``PSwAVLoss``), detached: the second value the loss
    returns, beside its dict of losses and logged scalars.

    Attributes:
        prototypes_used: Bool tensor of shape (K,): the prototypes that are
            the argmax of some target (PMSN) or code (PSwAV).
        mean_probs: Tensor of shape (K,), p̄: the mean anchor prototype
            probability, the quantity whose KL to the prior Assran et
            al., ICLR 2023, arXiv:2210.07277, eq. (9) penalises
            (PMSN; None for PSwAV).
        usage: Tensor of shape (K,), the cluster usage a learned prior
            learns from, when the head asked for it (else None).
    """
    prototypes_used: Tensor
    mean_probs: Optional[Tensor] = None
    usage: Optional[Tensor] = None
