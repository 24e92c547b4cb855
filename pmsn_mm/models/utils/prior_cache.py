"""A loss's view of its cluster prior: tensors per device/dtype, cached for
fixed priors, and the Sinkhorn marginal they imply."""
from typing import Dict, Optional

import torch
from torch import Tensor, nn


class PriorCache:
    """Prior probabilities as the losses need them.

    Fixed priors are computed once per ``(K, device, dtype)`` (float64 math)
    and kept in a plain attribute, so they are neither checkpointed nor
    broadcast by DDP. Priors learned from the data (``learns_from_usage``)
    are recomputed on every call from their current state.

    Args:
        prior: The loss's prior (a ``BasePrior``).
    """

    def __init__(self, prior: nn.Module) -> None:
        self.prior = prior
        self._probs: Dict[tuple, Tensor] = {}
        self._uniform: Dict[tuple, bool] = {}

    def probs(self, num_prototypes: int, device: torch.device,
              dtype: torch.dtype) -> Tensor:
        """The prior as a tensor.

        Args:
            num_prototypes: K.
            device: Target device.
            dtype: Target dtype.

        Returns:
            Tensor of shape (K,).
        """
        if self.prior.learns_from_usage:
            return self.prior(num_prototypes, dtype, device)
        key = (num_prototypes, torch.device(device), dtype)
        if key not in self._probs:
            probs = self.prior(num_prototypes, torch.float64)
            self._probs[key] = probs.to(device=device, dtype=dtype)
        return self._probs[key]

    def sinkhorn_marginal(self, prior: Tensor) -> Optional[Tensor]:
        """The ``col_marginal`` for ``distributed_sinkhorn``: None (the
        official uniform arithmetic, bit for bit) when every prior entry is
        equal, else the prior itself. Learned priors always pass the prior.

        Args:
            prior: Tensor of shape (K,), from :meth:`probs`.

        Returns:
            None or ``prior``.
        """
        if self.prior.learns_from_usage:
            return prior
        key = (prior.shape[0], prior.device, prior.dtype)
        if key not in self._uniform:
            self._uniform[key] = bool(torch.all(prior == prior[0]))
        return None if self._uniform[key] else prior
