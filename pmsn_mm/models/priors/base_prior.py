"""Base class and value checks shared by all cluster priors."""
from typing import Dict, Optional, Sequence, Union

import numpy as np
import torch
from torch import Tensor, nn

from ...utils.validation import check_int

ArrayLike = Union[Sequence[float], np.ndarray, Tensor]


def validate_prior_values(values: ArrayLike, setting: str) -> np.ndarray:
    """Check that ``values`` can be normalised into a prior; return float64.

    Nothing is clamped: every invalid input raises.

    Args:
        values: Non-negative weights or counts, shape (K,).
        setting: Name used in error messages, e.g. ``'ClassPrior counts'``.

    Returns:
        np.ndarray of shape (K,), dtype float64, NOT normalised.

    Raises:
        ValueError: If ``values`` is not 1-D and non-empty, or contains NaN
            or inf, negative entries, or zero entries (a zero prior entry
            makes KL(p_mean || prior) infinite), or is all zero.
    """
    if isinstance(values, Tensor):
        values = values.detach().cpu().numpy()
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f'{setting} must be a 1-D sequence of numbers, but got '
            f'{values!r}.') from err
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f'{setting} must be a non-empty 1-D sequence of '
                         f'numbers, but has shape {arr.shape}.')
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f'{setting} must be finite numbers (no NaN or inf), but '
            f'entries {np.flatnonzero(~np.isfinite(arr)).tolist()} are not.')
    if np.any(arr < 0):
        raise ValueError(f'{setting} must be >= 0, but entries '
                         f'{np.flatnonzero(arr < 0).tolist()} are negative.')
    if not np.any(arr > 0):
        raise ValueError(f'{setting} must not be all zero.')
    if np.any(arr == 0):
        raise ValueError(
            f'{setting} must be > 0 for every prototype, but entries '
            f'{np.flatnonzero(arr == 0).tolist()} are 0: a zero prior entry '
            'makes KL(p_mean || prior) infinite. Remove those prototypes or '
            'give them a positive weight.')
    return arr


def check_length(probs: np.ndarray, num_prototypes: int, setting: str) -> None:
    """Raise ``ValueError`` unless ``len(probs) == num_prototypes``.

    Args:
        probs: np.ndarray of shape (K',).
        num_prototypes: The number of prototypes K.
        setting: Name used in the error message.
    """
    if probs.shape[0] != num_prototypes:
        raise ValueError(
            f'{setting} has length {probs.shape[0]}, but must have length '
            f'num_prototypes={num_prototypes}.')


class BasePrior(nn.Module):
    """A cluster prior: a probability vector over the K prototypes, the
    ``prior`` of Assran et al., ICLR 2023, arXiv:2210.07277, eq. (9).

    The weights are validated, normalised in float64 and kept as the buffer
    :attr:`probs` (K,). A prior estimated during training sets
    ``learns_from_usage = True`` and implements :meth:`update_usage`.

    Args:
        num_prototypes: K, >= 1.
        weights: Unnormalised weights, shape (K,), all > 0.
        setting: Name of the weights in errors, e.g. ``'ClassPrior counts'``.
    """

    #: True for priors re-estimated from the data (see :meth:`update_usage`).
    learns_from_usage: bool = False
    #: The normalised prior (a buffer, registered in ``__init__``).
    probs: Tensor

    def __init__(self, num_prototypes: int, weights: ArrayLike,
                 setting: str) -> None:
        super().__init__()
        self.num_prototypes = check_int(
            f'{type(self).__name__} num_prototypes', num_prototypes, 1)
        values = validate_prior_values(weights, setting)
        check_length(values, self.num_prototypes, setting)
        self.register_buffer(
            'probs',
            torch.from_numpy(values / values.sum()),
            persistent=False)
        # all entries equal: Sinkhorn runs the official uniform arithmetic
        self.is_uniform = (not self.learns_from_usage
                           and bool(np.all(values == values[0])))

    def sinkhorn_marginal(self) -> Optional[Tensor]:
        """The ``col_marginal`` of ``distributed_sinkhorn`` for this prior:
        None (the official uniform arithmetic, bit for bit) when every
        entry is equal, else :attr:`probs`.

        Returns:
            None or Tensor of shape (K,).
        """
        return None if self.is_uniform else self.probs

    def update_usage(self, usage: Tensor, check: bool = True) -> None:
        """Take one training step's global cluster usage (learned priors).

        Args:
            usage: Tensor (K,), each prototype's mean target probability.
            check: Check the values of ``usage`` (a host sync) and log events;
                the head passes False in training steps (no host sync).
        """
        raise NotImplementedError(
            f'{type(self).__name__} is a fixed prior; it does not learn from '
            'cluster usage.')

    def statistics(self) -> Dict[str, Tensor]:
        """Scalars describing the current state of a learned prior, logged
        by the heads (keys without "loss"). Fixed priors have none.

        Returns:
            Dict of 0-dim tensors.
        """
        return {}

    def extra_repr(self) -> str:
        return f'num_prototypes={self.num_prototypes}'
