"""The power law ``p_k ∝ k ** -tau`` over K ranks (Assran et al., ICLR
2023, arXiv:2210.07277, eq. (9)).

A neutral home: ``PowerLawPrior`` (models) and ``PowerLawOverlayDataset``
(datasets) both use it, and neither imports the other.
"""
import numpy as np

from .validation import check_int, check_number


def power_law_weights(num_ranks: int, tau: float) -> np.ndarray:
    """Unnormalised weights ``k ** -tau`` for ``k = 1..K``, float64.

    Args:
        num_ranks: K, >= 1.
        tau: Exponent, a finite number >= 0 (0 is uniform).

    Returns:
        np.ndarray of shape (K,); rank 1 (index 0) is the largest.
    """
    num_ranks = check_int('num_ranks', num_ranks, 1)
    tau = check_number('tau', tau, 0)
    return np.arange(1, num_ranks + 1, dtype=np.float64)**(-tau)


def power_law_probs(num_ranks: int, tau: float) -> np.ndarray:
    """The normalised power law ``k ** -tau / sum_j j ** -tau``, float64.

    Args:
        num_ranks: K, >= 1.
        tau: Exponent, a finite number >= 0.

    Returns:
        np.ndarray of shape (K,) summing to 1.
    """
    weights = power_law_weights(num_ranks, tau)
    return weights / weights.sum()
