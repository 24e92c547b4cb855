"""Power-law cluster prior (PMSN, eq. (msn_prior))."""
import math

import numpy as np
from mmpretrain.registry import MODELS

from .base_prior import BasePrior


@MODELS.register_module()
class PowerLawPrior(BasePrior):
    """Power-law prior ``p_k ∝ k ** -tau`` for ``k = 1..K``.

    Prototype 1 is the most probable; ``tau = 0`` is uniform. The paper uses
    ``tau = 0.25`` and ``0.5``.

    Args:
        tau: Exponent, a finite number >= 0.
    """

    def __init__(self, tau: float) -> None:
        super().__init__()
        if (isinstance(tau, bool) or not isinstance(tau, (int, float))
                or not math.isfinite(tau) or tau < 0):
            raise ValueError(
                f'PowerLawPrior tau must be a finite number >= 0, but is '
                f'{tau!r}.')
        self.tau = float(tau)

    def weights(self, num_prototypes: int) -> np.ndarray:
        """Return ``k ** -tau`` for ``k = 1..K``, shape (K,).

        Args:
            num_prototypes: The number of prototypes K.
        """
        ranks = np.arange(1, num_prototypes + 1, dtype=np.float64)
        return ranks**(-self.tau)

    def extra_repr(self) -> str:
        return f'tau={self.tau}'
