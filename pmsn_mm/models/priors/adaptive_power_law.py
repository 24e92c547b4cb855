"""Power-law cluster prior whose exponent is fitted to the data online."""
import logging
import math
from typing import Dict, Optional, Tuple

import torch
from mmengine.logging import print_log
from mmpretrain.registry import MODELS
from torch import Tensor

from ...utils.power_law import power_law_weights
from ...utils.validation import check_int, check_number
from .base_prior import BasePrior


def fit_power_law_exponent(sorted_usage: Tensor) -> Tuple[Tensor, Tensor]:
    """Least-squares fit of ``log u_r = c - tau * log r`` (log-log plot).

    Ranks with ``u_r = 0`` are left out; nothing else is excluded or
    clamped. float64 on the input's device, no host sync.

    Args:
        sorted_usage: Tensor of shape (K,), non-negative cluster sizes in
            descending order (any scale: the slope ignores it).

    Returns:
        Tuple ``(tau, valid)`` of 0-dim tensors: the fitted exponent
        ``tau = -slope`` (float64) and whether at least 2 ranks were
        positive (otherwise ``tau`` is NaN).
    """
    u = sorted_usage.detach().double()
    log_rank = torch.arange(
        1, u.shape[0] + 1, dtype=torch.float64, device=u.device).log()
    used = u > 0
    w = used.double()
    count = w.sum()
    # unused ranks: log(1) = 0 as a placeholder, they get weight 0
    log_u = torch.where(used, u, torch.ones_like(u)).log()
    x_mean = (w * log_rank).sum() / count
    y_mean = (w * log_u).sum() / count
    dx = w * (log_rank - x_mean)
    slope = (dx * (log_u - y_mean)).sum() / (dx * dx).sum()
    valid = count >= 2
    tau = torch.where(valid, -slope, torch.full_like(slope, math.nan))
    return tau, valid


@MODELS.register_module()
class AdaptivePowerLawPrior(BasePrior):
    """Power-law prior ``p_k ∝ k ** -tau`` with ``tau`` learned from the data:
    the prior ``p_PL(tau)`` of Assran et al., ICLR 2023, arXiv:2210.07277, eq.
    (9), with the exponent it leaves to the user estimated during training.

    The prior keeps an EMA of each step's global cluster usage
    (:meth:`update_usage`; docs/choosing_a_prior.md), sorts it and fits
    ``tau_fit`` in log-log (:func:`fit_power_law_exponent`), used clamped to
    ``[tau_min, tau_max]`` (``tau_init`` before the first fit). As
    :class:`PowerLawPrior`, index 0 is the largest; only ``tau`` adapts.

    Two cautions. The first ``warmup_updates`` updates are only counted: an
    untrained encoder's usage fits a steep law of its own (about 1.2 on the
    toy set). And the estimate is a fixed point of data and prior, not an
    independent measurement: the KL term pulls the usage towards the prior
    (the losses measure usage before Sinkhorn, which would only read back
    its own marginals).

    Args:
        num_prototypes: K (>= 2), given by the head.
        tau_init: Exponent before the first fit. Defaults to 0.0 (uniform).
        tau_min: Lower bound of the exponent, >= 0. Defaults to 0.0.
        tau_max: Upper bound of the exponent, > ``tau_min``. Defaults to 1.0
            (the paper's priors use 0.25 and 0.5).
        momentum: EMA momentum in [0, 1) (the fraction of the old average kept
            per step; 0 fits every step's usage alone). Defaults to 0.99.
        sort_before_ema: Average sorted sizes (rank order) instead of
            per-prototype sizes, see above. Defaults to False.
        warmup_updates: First updates ignored, >= 0. Defaults to 0.
    """

    learns_from_usage = True
    # buffers, registered in ``__init__``
    tau: Tensor
    tau_fit: Tensor
    usage_ema: Tensor
    num_updates: Tensor

    def __init__(self,
                 num_prototypes: int,
                 tau_init: float = 0.0,
                 tau_min: float = 0.0,
                 tau_max: float = 1.0,
                 momentum: float = 0.99,
                 sort_before_ema: bool = False,
                 warmup_updates: int = 0) -> None:
        name = 'AdaptivePowerLawPrior'
        num_prototypes = check_int(f'{name} num_prototypes', num_prototypes,
                                   2)
        tau_min = check_number(f'{name} tau_min', tau_min, 0)
        tau_max = check_number(f'{name} tau_max', tau_max, tau_min,
                               low_open=True)
        tau_init = check_number(f'{name} tau_init', tau_init, tau_min,
                                tau_max)
        momentum = check_number(f'{name} momentum', momentum, 0, 1,
                                high_open=True)
        warmup_updates = check_int(f'{name} warmup_updates', warmup_updates,
                                   0)
        super().__init__(num_prototypes,
                         power_law_weights(num_prototypes, tau_init), name)
        self.tau_init = tau_init
        self.tau_min = tau_min
        self.tau_max = tau_max
        self.momentum = momentum
        self.sort_before_ema = bool(sort_before_ema)
        self.warmup_updates = warmup_updates
        f64 = torch.float64
        self.register_buffer('tau', torch.tensor(self.tau_init, dtype=f64))
        self.register_buffer('tau_fit', torch.tensor(self.tau_init,
                                                     dtype=f64))
        self.register_buffer('usage_ema', torch.zeros(num_prototypes,
                                                      dtype=f64))
        self.register_buffer('num_updates', torch.tensor(0,
                                                         dtype=torch.int64))
        self._out_of_bounds: Optional[bool] = None  # for the log only

    @torch.no_grad()
    def _refresh_probs(self) -> None:
        """``probs`` = the power law of the current ``tau`` (float64 math on
        the buffers' device, no host synchronisation).

        Replaced, not written in place: the step's loss may have saved the
        previous ``probs`` for its backward, which runs after this update.
        """
        ranks = torch.arange(
            1,
            self.num_prototypes + 1,
            dtype=torch.float64,
            device=self.probs.device)
        weights = ranks.pow(-self.tau.to(ranks.device))
        self.probs = (weights / weights.sum()).to(self.probs.dtype)

    def _load_from_state_dict(self, *args, **kwargs) -> None:
        # ``probs`` is not saved: it is recomputed from the restored tau
        super()._load_from_state_dict(*args, **kwargs)
        self._refresh_probs()

    @torch.no_grad()
    def update_usage(self, usage: Tensor, check: bool = True) -> None:
        """Update the usage EMA, refit and bound tau (one training step).

        Args:
            usage: Tensor of shape (K,), non-negative cluster sizes of this
                step over the global batch (e.g. mean target
                probabilities), in prototype order.
            check: Raise on a non-finite or negative usage and log bound
                crossings (host syncs). With False (the head's, in training)
                the update stays on the device and such a usage is ignored.
        """
        if usage.dim() != 1 or usage.shape[0] != self.num_prototypes:
            raise ValueError(
                'AdaptivePowerLawPrior usage must have shape (K,) with K = '
                f'num_prototypes = {self.num_prototypes}, but has shape '
                f'{tuple(usage.shape)}.')
        usage = usage.detach().to(self.usage_ema)
        usable = torch.isfinite(usage).all() & (usage >= 0).all()
        if check and not bool(usable):
            raise ValueError('AdaptivePowerLawPrior usage must be finite and '
                             f'>= 0, but is {usage.tolist()}.')
        self.num_updates += usable.long()
        # past the warm-up: selected on the device (torch.where), no sync
        active = usable & (self.num_updates > self.warmup_updates)
        if self.sort_before_ema:
            usage = usage.sort(descending=True).values
        usage = torch.where(usable, usage, self.usage_ema)  # no NaN in
        ema = self.usage_ema * self.momentum + usage * (1.0 - self.momentum)
        self.usage_ema.copy_(torch.where(active, ema, self.usage_ema))
        tau_fit, valid = fit_power_law_exponent(
            self.usage_ema.sort(descending=True).values)
        self.tau_fit.copy_(torch.where(valid & active, tau_fit,
                                       self.tau_fit))
        self.tau.copy_(
            torch.where(active, self.tau_fit.clamp(self.tau_min,
                                                   self.tau_max), self.tau))
        self._refresh_probs()
        if check:
            self._log_bounds()

    def statistics(self) -> Dict[str, Tensor]:
        """``prior_tau`` (the exponent in use) and ``prior_tau_fit`` (the
        unbounded least-squares fit)."""
        return dict(
            prior_tau=self.tau.clone(), prior_tau_fit=self.tau_fit.clone())

    def _log_bounds(self) -> None:
        """Warn when the fit moves outside (or back inside) the bounds."""
        fit = float(self.tau_fit)
        out = not self.tau_min <= fit <= self.tau_max
        if out != bool(self._out_of_bounds):
            if out:
                print_log(
                    f'AdaptivePowerLawPrior: fitted tau {fit:.4f} is outside '
                    f'[tau_min, tau_max] = [{self.tau_min}, {self.tau_max}]; '
                    f'using tau = {float(self.tau):.4f}.',
                    logger='current',
                    level=logging.WARNING)
            else:
                print_log(
                    f'AdaptivePowerLawPrior: fitted tau {fit:.4f} is back '
                    f'inside [{self.tau_min}, {self.tau_max}].',
                    logger='current',
                    level=logging.INFO)
        self._out_of_bounds = out

    def extra_repr(self) -> str:
        return (f'num_prototypes={self.num_prototypes}, '
                f'tau={float(self.tau):.4f}, tau_min={self.tau_min}, '
                f'tau_max={self.tau_max}, momentum={self.momentum}, '
                f'sort_before_ema={self.sort_before_ema}, '
                f'warmup_updates={self.warmup_updates}')
