"""SwAV loss whose Sinkhorn codes follow a cluster prior (PSwAV).

Paper §3, eq. (swav): SwAV minimises ``(1 / N) sum_n H(p_n^+, p_n)``
subject to ``P 1_N = (N / K) 1_K`` -- the constrained K-means of eq.
(constrained) with equal cluster sizes ``N_k = N / K``, i.e. a hard uniform
cluster prior, enforced by Sinkhorn-Knopp. PSwAV keeps SwAV's loss and
replaces the constraint by ``P 1_N = N * prior`` (``N_k = N * prior_k``):
the codes are computed by :func:`~pmsn_mm.models.utils.distributed_sinkhorn`
with ``col_marginal=prior``.
"""
import math
from typing import Dict, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from mmengine.dist import all_reduce
from mmpretrain.models.losses import SwAVLoss
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import check_index_list
from ..utils.sinkhorn import distributed_sinkhorn
from .pmsn_loss import global_mean_usage, kl_divergence


def _upcast(x: Tensor) -> Tensor:
    """Half-precision (AMP) scores are used in float32, as in the official
    SwAV; float32/float64 are kept."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) \
            or value < minimum:
        raise ValueError(f'PSwAVLoss {name} must be an int >= {minimum} but '
                         f'is {value!r}.')


def _check_positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(
            value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(
            f'PSwAVLoss {name} must be in (0, inf) but is {value!r}.')


@MODELS.register_module()
class PSwAVLoss(SwAVLoss):
    """mmpretrain's ``SwAVLoss`` with prior-matched Sinkhorn codes.

    For each assignment crop ``c`` (``crops_for_assign``), with scores
    ``s = x @ normalize(W).T`` (prototypes re-normalised before every step,
    as in SwAV) and the optional queue of SwAVHook prepended, the codes are
    ``q = Sinkhorn(exp(s_c / epsilon); col_marginal=prior)`` over the global
    batch, and the loss is SwAV's::

        (1 / |A|) sum_{c in A} (1 / (V - 1)) sum_{v != c}
            -mean_n sum_k q_nk log softmax(s_v / temperature)_nk

    With a uniform prior the codes are SwAV's (``col_marginal=None``), up
    to float round-off: the scores are shifted by their global maximum
    before ``exp`` (Sinkhorn ignores a global scale; the shift prevents
    overflow for small ``epsilon``), and, unlike mmpretrain's
    ``distributed_sinkhorn``, prototype sums are all-reduced in every
    iteration (as in the official SwAV).

    A prior learned from the data (``AdaptivePowerLawPrior``) is updated in
    training mode with the mean of ``softmax(s_c / epsilon)`` -- the
    codes before balancing -- over the assignment crops of the global batch
    (queue excluded).

    The loss returns a dict, so the model must be :class:`PSwAV` (mmpretrain's
    ``SwAV`` expects a tensor): ``loss_swav`` and the detached global
    statistics ``num_prototypes_used`` (distinct argmax of the batch codes),
    ``codes_prior_kl`` (KL(mean batch code || prior): how closely the
    ``sinkhorn_iterations`` met the prior) and the learned prior's
    ``prior_tau``/``prior_tau_fit``.

    Args:
        feat_dim: Dimension D of the (L2-normalised) embeddings.
        sinkhorn_iterations: Sinkhorn iterations, >= 1. Defaults to 3.
        epsilon: Entropic regularisation of the codes, > 0.
            Defaults to 0.05.
        temperature: Temperature of the predicted assignments, > 0.
            Defaults to 0.1.
        crops_for_assign: Crop indices whose codes are computed.
            Defaults to (0, 1).
        num_crops: Number of crops per resolution, e.g. ``[2, 6]``.
            Defaults to (2, ).
        num_prototypes: K, one set of prototypes (a single int; SwAV's
            multi-prototype lists are not supported: one prior each would be
            needed). Defaults to 3000.
        prior: Config of a prior or a built ``BasePrior``.
            Defaults to ``dict(type='UniformPrior')`` (SwAV).
        init_cfg: Initialization config. Defaults to None.
    """

    def __init__(self,
                 feat_dim: int,
                 sinkhorn_iterations: int = 3,
                 epsilon: float = 0.05,
                 temperature: float = 0.1,
                 crops_for_assign: Sequence[int] = (0, 1),
                 num_crops: Sequence[int] = (2, ),
                 num_prototypes: int = 3000,
                 prior: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[Union[dict, list]] = None) -> None:
        _check_int('feat_dim', feat_dim, 1)
        _check_int('num_prototypes', num_prototypes, 1)
        _check_int('sinkhorn_iterations', sinkhorn_iterations, 1)
        _check_positive('epsilon', epsilon)
        _check_positive('temperature', temperature)
        num_crops = list(num_crops)
        if not num_crops:
            raise ValueError('PSwAVLoss num_crops must list the number of '
                             'crops per resolution, e.g. [2, 6], but is [].')
        for n in num_crops:
            _check_int('num_crops entries', n, 1)
        total = sum(num_crops)
        if total < 2:
            raise ValueError('PSwAVLoss needs >= 2 crops in total, but '
                             f'num_crops={num_crops}.')
        crops_for_assign = list(
            check_index_list('PSwAVLoss crops_for_assign', crops_for_assign,
                             total, 'crop ',
                             context=f' (sum(num_crops)={total})'))
        super().__init__(
            feat_dim=feat_dim,
            sinkhorn_iterations=sinkhorn_iterations,
            epsilon=epsilon,
            temperature=temperature,
            crops_for_assign=crops_for_assign,
            num_crops=num_crops,
            num_prototypes=num_prototypes,
            init_cfg=init_cfg)
        self.feat_dim = feat_dim
        self.num_prototypes = num_prototypes
        if prior is None:
            prior = dict(type='UniformPrior')
        self.prior = MODELS.build(prior) if isinstance(prior, dict) else prior

    def prior_probs(self, num_prototypes: int, device: torch.device,
                    dtype: torch.dtype) -> Tensor:
        """``self.prior.probs(...)``: the prior over K prototypes, shape
        (K,) (cached for fixed priors)."""
        return self.prior.probs(num_prototypes, device, dtype)

    def codes(self, scores: Tensor, prior: Tensor) -> Tensor:
        """Prior-matched Sinkhorn codes of prototype scores.

        Args:
            scores: Tensor of shape (N_local, K), ``x @ normalize(W).T``
                (queue rows first, if any).
            prior: Tensor of shape (K,).

        Returns:
            Tensor of shape (N_local, K), rows sum to 1.
        """
        scores = _upcast(scores.detach())
        shift = scores.max().clone()
        all_reduce(shift, op='max')  # same shift on every rank
        return distributed_sinkhorn(
            torch.exp((scores - shift) / self.epsilon),
            self.sinkhorn_iterations,
            self.prior.sinkhorn_marginal(prior.to(scores.dtype)))

    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        """Compute the PSwAV loss.

        Args:
            x: Tensor of shape (sum(num_crops) * B, D), crop-major
                L2-normalised embeddings (``SwAVNeck``), rows
                ``[c * B:(c + 1) * B]`` are crop ``c``.

        Returns:
            Dict of tensors, see the class docstring.
        """
        total = sum(self.num_crops)
        if x.dim() != 2 or x.shape[1] != self.feat_dim or \
                x.shape[0] == 0 or x.shape[0] % total:
            raise ValueError(
                'PSwAVLoss input must have shape (sum(num_crops) * B, '
                f'feat_dim) = ({total} * B, {self.feat_dim}) but has shape '
                f'{tuple(x.shape)}.')
        # SwAV normalises the prototypes before every step.
        with torch.no_grad():
            weight = F.normalize(self.prototypes.weight.data.clone(), dim=1)
            self.prototypes.weight.copy_(weight)
        scores = _upcast(self.prototypes(x))
        embedding = x.detach()
        bs = x.shape[0] // total
        prior = self.prior_probs(self.num_prototypes, scores.device,
                                 scores.dtype)

        loss = 0
        batch_codes, batch_soft = [], []
        for i, crop_id in enumerate(self.crops_for_assign):
            with torch.no_grad():
                out = scores[bs * crop_id:bs * (crop_id + 1)].detach()
                batch_soft.append(F.softmax(out / self.epsilon, dim=1))
                out = self._with_queue(i, out, embedding[bs * crop_id:bs *
                                                         (crop_id + 1)])
                q = self.codes(out, prior)[-bs:]
                batch_codes.append(q)
            subloss = 0
            for v in range(total):
                if v == crop_id:
                    continue
                log_p = F.log_softmax(
                    scores[bs * v:bs * (v + 1)] / self.temperature, dim=1)
                subloss -= torch.mean(torch.sum(q * log_p, dim=1))
            loss += subloss / (total - 1)
        loss /= len(self.crops_for_assign)

        losses = dict(loss_swav=loss)
        losses.update(self._stats(torch.cat(batch_codes), prior))
        if self.prior.learns_from_usage and self.training:
            self.prior.update_usage(global_mean_usage(torch.cat(batch_soft)))
        losses.update({
            k: v.detach().to(scores.dtype)
            for k, v in self.prior.statistics().items()
        })
        return losses

    @torch.no_grad()
    def _with_queue(self, i: int, out: Tensor, embedding: Tensor) -> Tensor:
        """SwAV's queue (filled by ``SwAVHook``): prepend the scores of the
        queued embeddings once it is full, then push this batch in.

        Args:
            i: Index into ``crops_for_assign``.
            out: Tensor of shape (B, K), scores of this crop.
            embedding: Tensor of shape (B, D), embeddings of this crop.

        Returns:
            Tensor of shape (Q + B, K) or (B, K).
        """
        if self.queue is None:
            return out
        bs = out.shape[0]
        if self.use_queue or not torch.all(self.queue[i, -1, :] == 0):
            self.use_queue = True
            out = torch.cat((self.queue[i] @ self.prototypes.weight.t(), out))
        self.queue[i, bs:] = self.queue[i, :-bs].clone()
        self.queue[i, :bs] = embedding
        return out

    @torch.no_grad()
    def _stats(self, codes: Tensor, prior: Tensor) -> Dict[str, Tensor]:
        """Global statistics of the batch codes (one all-reduce)."""
        num_protos = codes.shape[1]
        used = codes.new_zeros(num_protos, dtype=torch.float64)
        used[codes.argmax(dim=1)] = 1.0
        count = used.new_tensor([float(codes.shape[0])])
        totals = torch.cat([used, codes.double().sum(dim=0), count])
        all_reduce(totals, op='sum')
        mean_code = totals[num_protos:2 * num_protos] / totals[-1]
        return dict(
            num_prototypes_used=(totals[:num_protos] > 0).sum().to(
                codes.dtype),
            codes_prior_kl=kl_divergence(mean_code,
                                         prior.double()).to(codes.dtype))

    def extra_repr(self) -> str:
        return (f'num_prototypes={self.num_prototypes}, '
                f'epsilon={self.epsilon}, temperature={self.temperature}, '
                f'sinkhorn_iterations={self.sinkhorn_iterations}, '
                f'crops_for_assign={self.crops_for_assign}, '
                f'num_crops={self.num_crops}')
