"""Power-law cluster prior (PMSN: Assran et al., ICLR 2023,
arXiv:2210.07277, eq. (9))."""
from mmpretrain.registry import MODELS

from ...utils.power_law import power_law_weights
from ...utils.validation import check_int, check_number
from .base_prior import BasePrior


@MODELS.register_module()
class PowerLawPrior(BasePrior):
    """Power-law prior ``p_k ∝ k ** -tau`` for ``k = 1..K``.

    Prototype 1 is the most probable; ``tau = 0`` is uniform. The paper uses
    ``tau = 0.25`` and ``0.5``.

    Args:
        num_prototypes: K, given by the head.
        tau: Exponent, a finite number >= 0.
    """

    def __init__(self, num_prototypes: int, tau: float) -> None:
        num_prototypes = check_int('PowerLawPrior num_prototypes',
                                   num_prototypes, 1)
        tau = check_number('PowerLawPrior tau', tau, 0)
        super().__init__(num_prototypes,
                         power_law_weights(num_prototypes, tau),
                         'PowerLawPrior')
        self.tau = tau

    def extra_repr(self) -> str:
        return f'num_prototypes={self.num_prototypes}, tau={self.tau}'
