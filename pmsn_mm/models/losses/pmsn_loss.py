"""PMSN loss: MSN's cross-entropy plus a KL penalty towards a cluster prior.

The probabilities come from :class:`~pmsn_mm.models.heads.PMSNHead` (its
prototypes, temperature and label smoothing); PMSN is Assran et al., ICLR
2023, arXiv:2210.07277, eq. (9)::

    (1 / N) * sum_i H(p_i^+, p_i) + lambda * KL(p_mean || prior)

With ``UniformPrior`` the penalty is ``lambda * (sum_k p_mean_k log p_mean_k
+ log K)``, the official MSN me-max term, so PMSN with a uniform prior is MSN
(eq. (6)). Behaviour follows ``init_msn_loss`` of the official MSN code
(facebookresearch/msn, ``src/losses.py``).
"""
from typing import Dict, Optional, Tuple

import torch
from mmengine.dist import all_reduce
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import (check_choice, check_int, check_number,
                                 check_positive)
from ..utils.dist import all_reduce_mean_with_grad
from ..utils.distributions import (entropy, global_mean_usage, kl_divergence,
                                   sharpen)
from ..utils.sinkhorn import distributed_sinkhorn
from .step_stats import PrototypeStepStats

KL_DIRECTIONS = ('forward', 'reverse')
PRIOR_USAGES = ('targets', 'anchors')


@MODELS.register_module()
class PMSNLoss(nn.Module):
    """Prior-matching MSN loss, eq. (9); MSN eq. (6) for a uniform prior.

    ``loss = mean_i H(p_i^+, p_i) + prior_weight * KL(p_mean || prior) [+
    entropy_weight * mean_i H(p_i)]``, where ``p_i`` are the anchor prototype
    probabilities, ``p_i^+ = sharpen(p(target_i), sharpen_temperature)`` (no
    gradient, optionally Sinkhorn-balanced towards the prior) and ``p_mean``
    the mean anchor probability over all views and ranks (exact gradient under
    DDP: :func:`~pmsn_mm.models.utils.all_reduce_mean_with_grad`).

    The loss never changes the prior; for a learned prior it returns the
    step's global usage (``return_usage``, docs/choosing_a_prior.md).

    Args:
        sharpen_temperature: Target sharpening temperature T, > 0
            (constant, as in every MSN config). Defaults to 0.25.
        prior_weight: lambda, >= 0. Defaults to 1.0.
        use_sinkhorn: Balance targets with distributed Sinkhorn-Knopp so
            that prototype k receives ``B * prior_k`` of the global batch
            (MSN's Sinkhorn for ``UniformPrior``). Defaults to False.
        sinkhorn_iterations: Sinkhorn iterations, >= 1. Defaults to 3.
        entropy_weight: Weight of the mean per-anchor entropy, >= 0; the
            term is only computed and returned when > 0. Defaults to 0.0.
        kl_direction: ``'forward'`` (default): KL(p_mean || prior), eq.
            (9); ``'reverse'``: KL(prior || p_mean), as in lightly.
        prior_usage: What a learned prior learns from: ``'targets'``
            (default; sharpened, before Sinkhorn) or ``'anchors'`` (p_mean).

    Returns ``(losses, stats)``: ``loss_ce``, ``loss_prior``, ``loss_entropy``
    (if ``entropy_weight > 0``) and the logged detached scalars ``prior_kl``,
    ``mean_probs_entropy``, ``num_prototypes_used``, ``max_target_prob``; a
    :class:`~pmsn_mm.models.losses.PrototypeStepStats` of (K,) ``mean_probs``,
    ``prototypes_used`` and, with ``return_usage``, ``usage``.
    """

    def __init__(self,
                 sharpen_temperature: float = 0.25,
                 prior_weight: float = 1.0,
                 use_sinkhorn: bool = False,
                 sinkhorn_iterations: int = 3,
                 entropy_weight: float = 0.0,
                 kl_direction: str = 'forward',
                 prior_usage: str = 'targets') -> None:
        super().__init__()
        self.sharpen_temperature = check_positive('sharpen_temperature',
                                                  sharpen_temperature)
        self.prior_weight = check_number('prior_weight', prior_weight, 0)
        self.use_sinkhorn = bool(use_sinkhorn)
        self.sinkhorn_iterations = check_int('sinkhorn_iterations',
                                             sinkhorn_iterations, 1)
        self.entropy_weight = check_number('entropy_weight', entropy_weight,
                                           0)
        check_choice('kl_direction', kl_direction, KL_DIRECTIONS)
        check_choice('prior_usage', prior_usage, PRIOR_USAGES)
        self.kl_direction = kl_direction
        self.prior_usage = prior_usage

    @staticmethod
    def _check_shapes(log_probs: Tensor, target_probs: Tensor) -> None:
        shapes = (f'anchor_log_probs {tuple(log_probs.shape)}, target_probs '
                  f'{tuple(target_probs.shape)}')
        if log_probs.dim() != 2 or target_probs.dim() != 2:
            raise ValueError('anchor_log_probs (B * V, K) and target_probs '
                             f'(B, K) must be 2-D, got {shapes}.')
        if target_probs.shape[0] == 0 or \
                log_probs.shape[0] % target_probs.shape[0]:
            raise ValueError('anchor rows (B * V) must be a positive '
                             f'multiple of target rows (B), got {shapes}.')
        if log_probs.shape[1] != target_probs.shape[1]:
            raise ValueError('anchors and targets must have the same number '
                             f'of prototypes K, got {shapes}.')

    def forward(self,
                anchor_log_probs: Tensor,
                target_probs: Tensor,
                prior_probs: Tensor,
                sinkhorn_marginal: Optional[Tensor] = None,
                return_usage: bool = False
                ) -> Tuple[Dict[str, Tensor], PrototypeStepStats]:
        """Compute the PMSN loss.

        Args:
            anchor_log_probs: Tensor of shape (B * V, K), ``log p_i`` of the
                anchors, view-major: rows ``[v * B:(v + 1) * B]`` are view
                ``v`` of the B images (``PMSNHead.log_probabilities``).
            target_probs: Tensor of shape (B, K), prototype probabilities of
                the targets before sharpening; used without gradient.
            prior_probs: Tensor of shape (K,), the prior (``prior.probs``).
            sinkhorn_marginal: Tensor of shape (K,), the ``col_marginal`` of
                Sinkhorn (``prior.sinkhorn_marginal()``), or None for the
                official uniform arithmetic. Defaults to None.
            return_usage: Also return ``usage`` (K,), the step's global
                cluster usage selected by ``prior_usage``, for a learned
                prior. Defaults to False.

        Returns:
            ``(losses, stats)``, see the class docstring.
        """
        self._check_shapes(anchor_log_probs, target_probs)
        if prior_probs.shape != (target_probs.shape[1], ):
            raise ValueError(
                f'prior_probs must have shape (K,) = '
                f'({target_probs.shape[1]},), got {tuple(prior_probs.shape)}.')
        num_views = anchor_log_probs.shape[0] // target_probs.shape[0]
        log_probs = anchor_log_probs
        probs = log_probs.exp()
        # Targets p_i^+ (no gradient).
        with torch.no_grad():
            target_probs = sharpen(target_probs.detach(),
                                   self.sharpen_temperature)
            usage = None
            if return_usage and self.prior_usage == 'targets':
                usage = global_mean_usage(target_probs)
            if self.use_sinkhorn:
                # validate=False: no host sync (the prior's values are
                # checked where it is built or updated)
                target_probs = distributed_sinkhorn(
                    target_probs, self.sinkhorn_iterations,
                    sinkhorn_marginal, validate=False)
        repeated_targets = target_probs.repeat(num_views, 1)

        # mean_i H(p_i^+, p_i)
        loss_ce = -torch.sum(repeated_targets * log_probs, dim=1).mean()

        # KL between p_mean (global over views and ranks) and the prior.
        mean_probs = all_reduce_mean_with_grad(probs.mean(dim=0))
        if return_usage and self.prior_usage == 'anchors':
            usage = mean_probs.detach()
        if self.kl_direction == 'forward':
            prior_kl = kl_divergence(mean_probs, prior_probs)
        else:
            prior_kl = kl_divergence(prior_probs, mean_probs)

        losses = dict(loss_ce=loss_ce, loss_prior=self.prior_weight * prior_kl)
        if self.entropy_weight > 0:
            losses['loss_entropy'] = self.entropy_weight * entropy(
                probs, log_probs).mean()
        scalars, used = self._stats(target_probs, mean_probs.detach(),
                                    prior_kl)
        losses.update(scalars)
        return losses, PrototypeStepStats(prototypes_used=used,
                                          mean_probs=mean_probs.detach(),
                                          usage=usage)

    @staticmethod
    @torch.no_grad()
    def _stats(target_probs: Tensor, mean_probs: Tensor,
               prior_kl: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        """Global-batch scalars, and the argmax set (bool (K,)), from one
        all-reduce of (K + 2) values."""
        num_protos = target_probs.shape[1]
        used = torch.zeros(
            num_protos, dtype=torch.float64, device=target_probs.device)
        used[target_probs.argmax(dim=1)] = 1.0
        max_sum = target_probs.max(dim=1).values.sum().double().reshape(1)
        # a fill on the device, not an upload of a Python list
        count = used.new_full((1, ), float(target_probs.shape[0]))
        totals = torch.cat([used, max_sum, count])
        all_reduce(totals, op='sum')
        dtype = target_probs.dtype
        used = totals[:num_protos] > 0
        return dict(
            prior_kl=prior_kl.detach(),
            mean_probs_entropy=entropy(mean_probs),
            num_prototypes_used=used.sum().to(dtype),
            max_target_prob=(totals[num_protos] / totals[-1]).to(dtype)), used

    def extra_repr(self) -> str:
        return (f'sharpen_temperature={self.sharpen_temperature}, '
                f'prior_weight={self.prior_weight}, '
                f'use_sinkhorn={self.use_sinkhorn}, '
                f'sinkhorn_iterations={self.sinkhorn_iterations}, '
                f'entropy_weight={self.entropy_weight}, '
                f'kl_direction={self.kl_direction!r}, '
                f'prior_usage={self.prior_usage!r}')
