"""What a prototype loss measured in one step, besides its losses."""
from typing import NamedTuple, Optional

from torch import Tensor


class PrototypeStepStats(NamedTuple):
    """Detached global-batch statistics of one step of a prototype loss:
    the second value ``PMSNLoss`` / ``PSwAVLoss`` return.

    Attributes:
        prototypes_used: Bool tensor of shape (K,): the prototypes that are
            the argmax of some target (PMSN) or code (PSwAV).
        mean_probs: Tensor of shape (K,), p̄, whose KL to the prior
            Assran et al., ICLR 2023, arXiv:2210.07277, eq. (9) penalises
            (None for PSwAV).
        usage: Tensor of shape (K,), the cluster usage a learned prior
            learns from, when the head asked for it (else None).
    """
    prototypes_used: Tensor
    mean_probs: Optional[Tensor] = None
    usage: Optional[Tensor] = None
