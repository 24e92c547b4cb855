"""Uniform cluster prior (MSN)."""
import numpy as np
from mmpretrain.registry import MODELS

from ...utils.validation import check_int
from .base_prior import BasePrior


@MODELS.register_module()
class UniformPrior(BasePrior):
    """Uniform prior ``p_k = 1 / K``; with it PMSN is MSN (me-max).

    Args:
        num_prototypes: K, given by the head.
    """

    def __init__(self, num_prototypes: int) -> None:
        num_prototypes = check_int('UniformPrior num_prototypes',
                                   num_prototypes, 1)
        super().__init__(num_prototypes, np.ones(num_prototypes),
                         'UniformPrior')
