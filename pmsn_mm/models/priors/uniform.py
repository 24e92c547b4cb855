"""Uniform cluster prior (MSN)."""
import numpy as np
from mmpretrain.registry import MODELS

from .base_prior import BasePrior


@MODELS.register_module()
class UniformPrior(BasePrior):
    """Uniform prior ``p_k = 1 / K``; with it PMSN is MSN (me-max)."""

    def weights(self, num_prototypes: int) -> np.ndarray:
        """Return ones of shape (K,).

        Args:
            num_prototypes: The number of prototypes K.
        """
        return np.ones(num_prototypes, dtype=np.float64)
