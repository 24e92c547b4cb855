"""Base class and validation shared by all cluster priors."""
from abc import ABCMeta, abstractmethod
from typing import Dict, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import Tensor, nn

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


class BasePrior(nn.Module, metaclass=ABCMeta):
    """A cluster prior: a probability vector over the K prototypes.

    Subclasses implement :meth:`weights` (float64, unnormalised);
    :meth:`forward` validates and normalises it (the ``prior`` of eq.
    (msn_prior) in the paper).

    Its users (``PMSNHead``, ``PSwAVLoss``) read it through :meth:`probs`
    (cached per ``(K, device, dtype)`` for fixed priors) and
    :meth:`sinkhorn_marginal`.

    A prior that is estimated from the data during training sets
    ``learns_from_usage = True`` and implements :meth:`update_usage`; the
    losses then feed it the global cluster usage of every training step and
    its probabilities are not cached.
    """

    #: True for priors re-estimated from the data (see :meth:`update_usage`).
    learns_from_usage: bool = False

    def __init__(self) -> None:
        super().__init__()
        # plain dicts: neither checkpointed nor broadcast by DDP
        self._probs_cache: Dict[Tuple, Tensor] = {}
        self._uniform_cache: Dict[Tuple, bool] = {}

    def probs(self,
              num_prototypes: int,
              device: Optional[torch.device] = None,
              dtype: torch.dtype = torch.float32) -> Tensor:
        """:meth:`forward`, computed once per ``(K, device, dtype)`` for a
        fixed prior (float64 math), on every call for a learned one.

        Args:
            num_prototypes: K.
            device: Device of the result; None is the CPU.
            dtype: dtype of the result. Defaults to torch.float32.

        Returns:
            Tensor of shape (K,).
        """
        if self.learns_from_usage:
            return self(num_prototypes, dtype, device)
        key = (num_prototypes, torch.device(device or 'cpu'), dtype)
        if key not in self._probs_cache:
            self._probs_cache[key] = self(num_prototypes, torch.float64).to(
                device=key[1], dtype=dtype)
        return self._probs_cache[key]

    def sinkhorn_marginal(self, probs: Tensor) -> Optional[Tensor]:
        """The ``col_marginal`` of ``distributed_sinkhorn`` for this prior:
        None (the official uniform arithmetic, bit for bit) when every
        entry is equal, else ``probs``. Learned priors always pass ``probs``.

        Args:
            probs: Tensor of shape (K,), from :meth:`probs`.

        Returns:
            None or ``probs``.
        """
        if self.learns_from_usage:
            return probs
        key = (probs.shape[0], probs.device, probs.dtype)
        if key not in self._uniform_cache:
            self._uniform_cache[key] = bool(torch.all(probs == probs[0]))
        return None if self._uniform_cache[key] else probs

    def update_usage(self, usage: Tensor) -> None:
        """Take one training step's global cluster usage (learned priors).

        Args:
            usage: Tensor of shape (K,), the mean target probability of each
                prototype over the global batch.
        """
        raise NotImplementedError(
            f'{type(self).__name__} is a fixed prior; it does not learn from '
            'cluster usage.')

    def statistics(self) -> Dict[str, Tensor]:
        """Scalars describing the current state of a learned prior, logged
        by the losses (keys without "loss"). Fixed priors have none.

        Returns:
            Dict of 0-dim tensors.
        """
        return {}

    @abstractmethod
    def weights(self, num_prototypes: int) -> np.ndarray:
        """Unnormalised, validated weights.

        Args:
            num_prototypes: The number of prototypes K.

        Returns:
            np.ndarray of shape (K,), float64, all entries > 0.
        """

    def forward(self,
                num_prototypes: int,
                dtype: torch.dtype = torch.float32,
                device: Optional[torch.device] = None) -> Tensor:
        """Return the prior probabilities.

        Args:
            num_prototypes: The number of prototypes K, >= 1.
            dtype: dtype of the result (the math is float64).
                Defaults to torch.float32.
            device: Device of the result; None is the CPU. Defaults to None.

        Returns:
            Tensor of shape (K,) summing to 1, all entries > 0.
        """
        if (isinstance(num_prototypes, bool)
                or not isinstance(num_prototypes,
                                  (int, np.integer)) or num_prototypes < 1):
            raise ValueError('num_prototypes must be an int >= 1 but is '
                             f'{num_prototypes!r}.')
        name = type(self).__name__
        weights = validate_prior_values(
            self.weights(int(num_prototypes)), f'{name} weights')
        check_length(weights, num_prototypes, name)
        return torch.from_numpy(weights / weights.sum()).to(
            device=device, dtype=dtype)
