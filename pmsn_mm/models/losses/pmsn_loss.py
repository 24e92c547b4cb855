"""PMSN loss: MSN's cross-entropy plus a KL penalty towards a cluster prior.

Paper eq. (msn_prior) (PMSN)::

    (1 / N) * sum_i H(p_i^+, p_i) + lambda * KL(p_mean || prior)

With ``UniformPrior`` the penalty is ``lambda * (sum_k p_mean_k log p_mean_k
+ log K)``, the official MSN me-max term, so PMSN with a uniform prior is MSN
(eq. (msn)). Behaviour follows ``init_msn_loss`` of the official MSN code
(facebookresearch/msn, ``src/losses.py``).
"""
import math
from typing import Dict, Optional, Union

import torch
import torch.nn.functional as F
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ..utils.dist import all_reduce_mean_with_grad, all_reduce_sum
from ..utils.prior_cache import PriorCache
from ..utils.sinkhorn import distributed_sinkhorn

KL_DIRECTIONS = ('forward', 'reverse')
PRIOR_USAGES = ('targets', 'anchors')


def prototype_log_probabilities(x: Tensor,
                                prototypes: Tensor,
                                temperature: float,
                                label_smoothing: float = 0.0) -> Tensor:
    """Log of MSN's soft-nearest-neighbour prototype probabilities.

    ``p = softmax(normalize(x) @ normalize(prototypes).T / temperature)
    @ proto_labels`` with ``proto_labels`` the label-smoothed identity
    (off-diagonal ``s / K``, diagonal ``1 - s + s / K``), i.e.
    ``p = (1 - s) * softmax(...) + s / K``. Computed in log space
    (``log_softmax``, ``logaddexp``), so ``log p`` is finite even where
    ``p`` underflows.

    Args:
        x: Tensor of shape (N, D), embeddings.
        prototypes: Tensor of shape (K, D).
        temperature: Cosine-similarity temperature, > 0.
        label_smoothing: Smoothing ``s`` of the prototype labels, in [0, 1).

    Returns:
        Tensor of shape (N, K): ``log p``.
    """
    logits = F.normalize(x, dim=1) @ F.normalize(prototypes, dim=1).t()
    log_probs = F.log_softmax(logits / temperature, dim=1)
    if label_smoothing > 0:
        num_protos = prototypes.shape[0]
        log_probs = torch.logaddexp(
            log_probs + math.log1p(-label_smoothing),
            torch.full_like(log_probs, math.log(label_smoothing / num_protos)))
    return log_probs


def sharpen(probs: Tensor, temperature: float) -> Tensor:
    """MSN sharpening ``p ** (1 / T) / sum_k p_k ** (1 / T)``, per row.

    Computed as ``softmax(log(p) / T)`` (same value, no underflow of the
    powers).

    Args:
        probs: Tensor of shape (N, K), rows are probability vectors.
        temperature: Sharpening temperature T, > 0.

    Returns:
        Tensor of shape (N, K), rows sum to 1.
    """
    return F.softmax(torch.log(probs) / temperature, dim=1)


def kl_divergence(p: Tensor, q: Tensor) -> Tensor:
    """``KL(p || q) = sum_k p_k (log p_k - log q_k)`` with a tiny floor.

    Inside the logs only, both arguments are floored at
    ``torch.finfo(dtype).tiny`` so that an empty entry (``p_k = 0`` or
    ``q_k = 0``) gives a finite value and finite gradients: ``0 * log(tiny)
    = 0``. No other clamping.

    Args:
        p: Tensor of shape (K,), a probability vector.
        q: Tensor of shape (K,), a probability vector.

    Returns:
        Scalar tensor.
    """
    tiny = torch.finfo(p.dtype).tiny
    return torch.sum(
        p * (torch.log(p.clamp_min(tiny)) - torch.log(q.clamp_min(tiny))))


def entropy(p: Tensor, log_p: Optional[Tensor] = None) -> Tensor:
    """Shannon entropy along the last dim, ``-sum_k p_k log p_k``.

    Args:
        p: Tensor of shape (..., K).
        log_p: Optional ``log p`` of the same shape (finite where
            ``p == 0``); defaults to ``log(max(p, tiny))``.

    Returns:
        Tensor of shape (...).
    """
    if log_p is None:
        log_p = torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))
    return -torch.sum(p * log_p, dim=-1)


@torch.no_grad()
def global_mean_usage(probs: Tensor) -> Tensor:
    """Mean probability of each prototype over the global batch.

    Args:
        probs: Tensor of shape (B_local, K), e.g. sharpened targets.

    Returns:
        Tensor of shape (K,), float64, the same on every rank (one
        all-reduce of K + 1 values).
    """
    count = probs.new_full((1, ), float(probs.shape[0]), dtype=torch.float64)
    totals = all_reduce_sum(torch.cat([probs.double().sum(dim=0), count]))
    return totals[:-1] / totals[-1]


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value,
                       (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f'{name} must be in (0, inf) but is {value!r}.')


@MODELS.register_module()
class PMSNLoss(nn.Module):
    """Prior-matching MSN loss, paper eq. (msn_prior); MSN eq. (msn) when
    the prior is uniform.

    ``loss = mean_i H(p_i^+, p_i) + prior_weight * KL(p_mean || prior)
    [+ entropy_weight * mean_i H(p_i)]``, where ``p_i`` are the anchor
    prototype probabilities (:func:`prototype_log_probabilities`),
    ``p_i^+ = sharpen(p(target_i), sharpen_temperature)`` (no gradient,
    optionally Sinkhorn-balanced over the global batch towards the prior's
    cluster sizes) and ``p_mean`` is the mean of all anchor probabilities
    over all views and all ranks (see
    :func:`~pmsn_mm.models.utils.all_reduce_mean_with_grad` for why its
    gradient is exact under DDP; ranks are assumed to hold equal batches).

    A prior learned from the data (``learns_from_usage``, e.g.
    ``AdaptivePowerLawPrior``) is used as it stands for this step and then,
    in training mode, updated with the step's global cluster usage
    (``prior_usage``): by default the target usage, the mean of the
    sharpened targets over all ranks, taken *before* Sinkhorn (after it the
    usage would equal the prior's own marginals). Sharpening concentrates
    each target on its nearest prototypes, so this usage is steeper than
    ``p_mean`` unless the targets are confident, and a prior fitted to it
    and matched by ``p_mean`` steepens the next usage again: it can drift
    towards the prior's upper bound (warm-up and bounds of
    ``AdaptivePowerLawPrior`` limit this). ``prior_usage='anchors'`` uses
    ``p_mean`` itself, the quantity the KL term matches to the prior: no
    such bias, but the estimate then moves only as far as the
    cross-entropy pulls ``p_mean`` away from the current prior.

    Args:
        temperature: Cosine-similarity temperature, > 0. Defaults to 0.1.
        sharpen_temperature: Target sharpening temperature T, > 0
            (constant, as in every MSN config). Defaults to 0.25.
        prior_weight: lambda, >= 0. Defaults to 1.0.
        label_smoothing: Prototype label smoothing, in [0, 1).
            Defaults to 0.0.
        use_sinkhorn: Balance targets with distributed Sinkhorn-Knopp so that
            over the global batch of B targets prototype k receives
            ``B * prior_k`` (:func:`~pmsn_mm.models.utils.distributed_sinkhorn`
            with ``col_marginal=prior``). A prior whose entries are all equal
            (``UniformPrior``) runs MSN's uniform Sinkhorn unchanged.
            Defaults to False.
        sinkhorn_iterations: Sinkhorn iterations, >= 1. Defaults to 3.
        entropy_weight: Weight of the mean per-anchor entropy, >= 0; the
            term is only computed and returned when > 0. Defaults to 0.0.
        kl_direction: ``'forward'``: KL(p_mean || prior), the paper's eq.
            (msn_prior); ``'reverse'``: KL(prior || p_mean), as in lightly.
            Defaults to ``'forward'``.
        prior: Config of a prior (``UniformPrior``, ``PowerLawPrior``,
            ``ClassPrior``, ``FilePrior``, ``AdaptivePowerLawPrior``) or a
            built ``BasePrior``. Defaults to ``dict(type='UniformPrior')``.
        prior_usage: What a learned prior learns from: ``'targets'`` (mean
            sharpened target, before Sinkhorn) or ``'anchors'`` (``p_mean``).
            Ignored by fixed priors. Defaults to ``'targets'``.

    Returned dict (all tensors): ``loss_ce``, ``loss_prior`` (=
    ``prior_weight * prior_kl``), ``loss_entropy`` (only if
    ``entropy_weight > 0``) -- summed by mmengine -- and the detached,
    global-batch statistics ``prior_kl``, ``mean_probs_entropy`` (entropy of
    p_mean), ``num_prototypes_used`` (distinct argmax of the targets) and
    ``max_target_prob`` (mean over targets of their max probability), plus
    the learned prior's own statistics (``AdaptivePowerLawPrior``:
    ``prior_tau``, ``prior_tau_fit``) after this step's update.
    """

    def __init__(self,
                 temperature: float = 0.1,
                 sharpen_temperature: float = 0.25,
                 prior_weight: float = 1.0,
                 label_smoothing: float = 0.0,
                 use_sinkhorn: bool = False,
                 sinkhorn_iterations: int = 3,
                 entropy_weight: float = 0.0,
                 kl_direction: str = 'forward',
                 prior: Optional[Union[dict, nn.Module]] = None,
                 prior_usage: str = 'targets') -> None:
        super().__init__()
        _check_positive('temperature', temperature)
        _check_positive('sharpen_temperature', sharpen_temperature)
        if not (isinstance(prior_weight, (int, float))
                and math.isfinite(prior_weight) and prior_weight >= 0):
            raise ValueError(
                f'prior_weight must be in [0, inf) but is {prior_weight!r}.')
        if not (isinstance(label_smoothing,
                           (int, float)) and 0 <= label_smoothing < 1):
            raise ValueError('label_smoothing must be in [0, 1) but is '
                             f'{label_smoothing!r}.')
        if (isinstance(sinkhorn_iterations, bool)
                or not isinstance(sinkhorn_iterations, int)
                or sinkhorn_iterations < 1):
            raise ValueError('sinkhorn_iterations must be an int >= 1 but is '
                             f'{sinkhorn_iterations!r}.')
        if not (isinstance(entropy_weight, (int, float))
                and math.isfinite(entropy_weight) and entropy_weight >= 0):
            raise ValueError('entropy_weight must be in [0, inf) but is '
                             f'{entropy_weight!r}.')
        if kl_direction not in KL_DIRECTIONS:
            raise ValueError(f'kl_direction must be one of {KL_DIRECTIONS} '
                             f'but is {kl_direction!r}.')
        if prior_usage not in PRIOR_USAGES:
            raise ValueError(f'prior_usage must be one of {PRIOR_USAGES} '
                             f'but is {prior_usage!r}.')
        self.temperature = float(temperature)
        self.prior_usage = prior_usage
        self.sharpen_temperature = float(sharpen_temperature)
        self.prior_weight = float(prior_weight)
        self.label_smoothing = float(label_smoothing)
        self.use_sinkhorn = bool(use_sinkhorn)
        self.sinkhorn_iterations = sinkhorn_iterations
        self.entropy_weight = float(entropy_weight)
        self.kl_direction = kl_direction
        if prior is None:
            prior = dict(type='UniformPrior')
        self.prior = MODELS.build(prior) if isinstance(prior, dict) else prior
        self._prior_cache = PriorCache(self.prior)

    def prior_probs(self, num_prototypes: int, device: torch.device,
                    dtype: torch.dtype) -> Tensor:
        """The prior as a tensor (float64 math), cached unless the prior is
        learned from the data.

        Args:
            num_prototypes: K.
            device: Target device.
            dtype: Target dtype.

        Returns:
            Tensor of shape (K,).
        """
        return self._prior_cache.probs(num_prototypes, device, dtype)

    def sinkhorn_marginal(self, prior: Tensor) -> Optional[Tensor]:
        """The ``col_marginal`` for Sinkhorn: None (MSN's uniform
        arithmetic, bit for bit) when all prior entries are equal, else the
        prior itself. Learned priors always pass the prior.

        Args:
            prior: Tensor of shape (K,), from :meth:`prior_probs`.

        Returns:
            None or ``prior``.
        """
        return self._prior_cache.sinkhorn_marginal(prior)

    @staticmethod
    def _check_shapes(anchors: Tensor, targets: Tensor,
                      prototypes: Tensor) -> None:
        shapes = (f'anchors {tuple(anchors.shape)}, targets '
                  f'{tuple(targets.shape)}, prototypes '
                  f'{tuple(prototypes.shape)}')
        if anchors.dim() != 2 or targets.dim() != 2 or prototypes.dim() != 2:
            raise ValueError('anchors (B * V, D), targets (B, D) and '
                             f'prototypes (K, D) must be 2-D, got {shapes}.')
        if targets.shape[0] == 0 or anchors.shape[0] % targets.shape[0]:
            raise ValueError('anchors rows (B * V) must be a positive '
                             f'multiple of targets rows (B), got {shapes}.')
        if not anchors.shape[1] == targets.shape[1] == prototypes.shape[1]:
            raise ValueError('anchors, targets and prototypes must have the '
                             f'same feature dim D, got {shapes}.')

    def forward(self, anchors: Tensor, targets: Tensor,
                prototypes: Tensor) -> Dict[str, Tensor]:
        """Compute the PMSN loss.

        Args:
            anchors: Tensor of shape (B * V, D), view-major: rows
                ``[v * B:(v + 1) * B]`` are view ``v`` of the B images.
            targets: Tensor of shape (B, D), target-view embeddings; used
                without gradient.
            prototypes: Tensor of shape (K, D); pass the Parameter itself so
                that prototypes learn.

        Returns:
            Dict of tensors, see the class docstring.
        """
        self._check_shapes(anchors, targets, prototypes)
        # Half-precision inputs (AMP) are computed in float32, as in MSN.
        anchors, targets, prototypes = (
            t.float() if t.dtype in (torch.float16, torch.bfloat16) else t
            for t in (anchors, targets, prototypes))
        num_views = anchors.shape[0] // targets.shape[0]
        num_protos = prototypes.shape[0]

        # Anchor predictions p_i.
        log_probs = prototype_log_probabilities(anchors, prototypes,
                                                self.temperature,
                                                self.label_smoothing)
        probs = log_probs.exp()

        prior = self.prior_probs(num_protos, probs.device, probs.dtype)
        # Targets p_i^+ (no gradient).
        with torch.no_grad():
            target_probs = prototype_log_probabilities(
                targets.detach(), prototypes.detach(), self.temperature,
                self.label_smoothing).exp()
            target_probs = sharpen(target_probs, self.sharpen_temperature)
            learn = self.prior.learns_from_usage and self.training
            usage = None
            if learn and self.prior_usage == 'targets':
                usage = global_mean_usage(target_probs)
            if self.use_sinkhorn:
                target_probs = distributed_sinkhorn(
                    target_probs, self.sinkhorn_iterations,
                    self.sinkhorn_marginal(prior))
        repeated_targets = target_probs.repeat(num_views, 1)

        # mean_i H(p_i^+, p_i)
        loss_ce = -torch.sum(repeated_targets * log_probs, dim=1).mean()

        # KL between p_mean (global over views and ranks) and the prior.
        mean_probs = all_reduce_mean_with_grad(probs.mean(dim=0))
        if learn and self.prior_usage == 'anchors':
            usage = mean_probs.detach()
        if self.kl_direction == 'forward':
            prior_kl = kl_divergence(mean_probs, prior)
        else:
            prior_kl = kl_divergence(prior, mean_probs)

        losses = dict(loss_ce=loss_ce, loss_prior=self.prior_weight * prior_kl)
        if self.entropy_weight > 0:
            losses['loss_entropy'] = self.entropy_weight * entropy(
                probs, log_probs).mean()
        losses.update(self._stats(target_probs, mean_probs.detach(), prior_kl))
        if usage is not None:
            self.prior.update_usage(usage)
        losses.update({
            k: v.detach().to(probs.dtype)
            for k, v in self.prior.statistics().items()
        })
        return losses

    @staticmethod
    @torch.no_grad()
    def _stats(target_probs: Tensor, mean_probs: Tensor,
               prior_kl: Tensor) -> Dict[str, Tensor]:
        """Global-batch statistics from one all-reduce of (K + 2) values."""
        num_protos = target_probs.shape[1]
        used = torch.zeros(
            num_protos, dtype=torch.float64, device=target_probs.device)
        used[target_probs.argmax(dim=1)] = 1.0
        max_sum = target_probs.max(dim=1).values.sum().double().reshape(1)
        count = used.new_tensor([float(target_probs.shape[0])])
        totals = all_reduce_sum(torch.cat([used, max_sum, count]))
        dtype = target_probs.dtype
        return dict(
            prior_kl=prior_kl.detach(),
            mean_probs_entropy=entropy(mean_probs),
            num_prototypes_used=(totals[:num_protos] > 0).sum().to(dtype),
            max_target_prob=(totals[num_protos] / totals[-1]).to(dtype))

    def extra_repr(self) -> str:
        return (f'temperature={self.temperature}, '
                f'sharpen_temperature={self.sharpen_temperature}, '
                f'prior_weight={self.prior_weight}, '
                f'label_smoothing={self.label_smoothing}, '
                f'use_sinkhorn={self.use_sinkhorn}, '
                f'sinkhorn_iterations={self.sinkhorn_iterations}, '
                f'entropy_weight={self.entropy_weight}, '
                f'kl_direction={self.kl_direction!r}, '
                f'prior_usage={self.prior_usage!r}')
