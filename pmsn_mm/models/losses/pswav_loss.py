"""SwAV loss whose Sinkhorn codes follow a cluster prior (PSwAV).

Assran et al., ICLR 2023, arXiv:2210.07277, eq. (8): SwAV minimises ``(1 / N)
sum_n H(p_n^+, p_n)`` subject to ``P 1_N = (N / K) 1_K`` -- the constrained
K-means of eq. (7) with equal cluster sizes ``N_k = N / K``, i.e. a hard
uniform cluster prior, enforced by Sinkhorn-Knopp. PSwAV keeps SwAV's loss and
replaces the constraint by ``P 1_N = N * prior`` (``N_k = N * prior_k``): the
codes are computed by :func:`~pmsn_mm.models.utils.distributed_sinkhorn` with
``col_marginal=prior``.
"""
from typing import Dict, Optional, Sequence, Tuple, Union, cast

import torch
import torch.nn.functional as F
from mmengine.dist import all_reduce
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import check_index_list, check_int, check_positive
from ..utils.amp import upcast
from ..utils.distributions import global_mean_usage, kl_divergence
from ..utils.sinkhorn import distributed_sinkhorn
from .step_stats import PrototypeStepStats


@MODELS.register_module()
class PSwAVLoss(nn.Module):
    """SwAV's swapped-prediction loss with prior-matched Sinkhorn codes.

    The prototypes and the prior belong to
    :class:`~pmsn_mm.models.heads.PSwAVHead`, which passes them in. For
    each assignment crop ``c``, with scores ``s = x @ W.T`` (and SwAVHook's
    optional queue prepended), the codes are ``q = Sinkhorn(exp(s_c /
    epsilon); col_marginal=prior)`` over the global batch, and the loss is
    SwAV's::

        (1 / |A|) sum_{c in A} (1 / (V - 1)) sum_{v != c}
            -mean_n sum_k q_nk log softmax(s_v / temperature)_nk

    With a uniform prior the codes are SwAV's up to round-off (scores are
    shifted by their global maximum before ``exp``). The only state is the
    ``queue`` slot that ``SwAVHook`` writes.

    Returns ``(losses, stats)``: ``loss_swav`` and the detached scalars
    ``num_prototypes_used`` and ``codes_prior_kl`` (KL(mean code || prior));
    a :class:`~pmsn_mm.models.losses.PrototypeStepStats` of the codes'
    argmax set and, with ``return_usage``, ``usage`` (K,): the mean of
    ``softmax(s_c / epsilon)`` (codes before balancing, queue excluded).

    Args:
        sinkhorn_iterations: Sinkhorn iterations, >= 1. Defaults to 3.
        epsilon: Entropic regularisation of the codes, > 0. Defaults to 0.05.
        temperature: Of the predicted assignments, > 0. Defaults to 0.1.
        crops_for_assign: Crops whose codes are computed. Defaults to (0, 1).
        num_crops: Crops per resolution, e.g. ``[2, 6]``. Defaults to (2, ).
    """

    def __init__(self,
                 sinkhorn_iterations: int = 3,
                 epsilon: float = 0.05,
                 temperature: float = 0.1,
                 crops_for_assign: Sequence[int] = (0, 1),
                 num_crops: Sequence[int] = (2, )) -> None:
        super().__init__()
        self.sinkhorn_iterations = check_int('PSwAVLoss sinkhorn_iterations',
                                             sinkhorn_iterations, 1)
        self.epsilon = check_positive('PSwAVLoss epsilon', epsilon)
        self.temperature = check_positive('PSwAVLoss temperature',
                                          temperature)
        num_crops = list(num_crops)
        if not num_crops:
            raise ValueError('PSwAVLoss num_crops must list the number of '
                             'crops per resolution, e.g. [2, 6], but is [].')
        for n in num_crops:
            check_int('PSwAVLoss num_crops entries', n, 1)
        total = sum(num_crops)
        if total < 2:
            raise ValueError('PSwAVLoss needs >= 2 crops in total, but '
                             f'num_crops={num_crops}.')
        self.num_crops = num_crops
        self.crops_for_assign = list(
            check_index_list('PSwAVLoss crops_for_assign', crops_for_assign,
                             total, 'crop ',
                             context=f' (sum(num_crops)={total})'))
        # SwAVHook's slot (see the class docstring)
        self.queue = None
        self.use_queue = False

    def codes(self, scores: Tensor, prior_marginal) -> Tensor:
        """Prior-matched Sinkhorn codes of prototype scores.

        Args:
            scores: (N_local, K), ``x @ W.T`` (queue rows first, if any).
            prior_marginal: Tensor of shape (K,), or None for uniform.

        Returns:
            Tensor of shape (N_local, K), rows sum to 1.
        """
        scores = upcast(scores.detach())
        shift = scores.max().clone()
        all_reduce(shift, op='max')  # same shift on every rank
        # validate=False: no host sync (the prior's values are checked where
        # it is built or updated)
        return distributed_sinkhorn(
            torch.exp((scores - shift) / self.epsilon),
            self.sinkhorn_iterations,
            None if prior_marginal is None else prior_marginal.to(
                scores.dtype), validate=False)

    def forward(self,
                x: Tensor,
                prototypes: Tensor,
                prior_probs: Tensor,
                sinkhorn_marginal: Optional[Tensor] = None,
                return_usage: bool = False
                ) -> Tuple[Dict[str, Tensor], PrototypeStepStats]:
        """Compute the PSwAV loss.

        Args:
            x: Tensor of shape (sum(num_crops) * B, D), crop-major
                L2-normalised embeddings (``SwAVNeck``), rows
                ``[c * B:(c + 1) * B]`` are crop ``c``.
            prototypes: Tensor of shape (K, D), the normalised prototypes.
            prior_probs: Tensor of shape (K,), the cluster prior.
            sinkhorn_marginal: Tensor of shape (K,), the ``col_marginal`` of
                the codes' Sinkhorn (``prior.sinkhorn_marginal()``), or None
                for SwAV's uniform Sinkhorn. Defaults to None.
            return_usage: Also return ``usage``. Defaults to False.

        Returns:
            ``(losses, stats)``, see the class docstring.
        """
        total = sum(self.num_crops)
        if x.dim() != 2 or prototypes.dim() != 2 or \
                x.shape[1] != prototypes.shape[1] or \
                x.shape[0] == 0 or x.shape[0] % total:
            raise ValueError(
                'PSwAVLoss input must have shape (sum(num_crops) * B, D) = '
                f'({total} * B, D) with the prototypes\' D, but has shape '
                f'{tuple(x.shape)} (prototypes {tuple(prototypes.shape)}).')
        if prior_probs.shape != (prototypes.shape[0], ):
            raise ValueError(
                f'prior_probs must have shape (K,) = ({prototypes.shape[0]},)'
                f', got {tuple(prior_probs.shape)}.')
        scores = upcast(F.linear(x, prototypes))
        embedding = x.detach()
        bs = x.shape[0] // total
        prior = prior_probs.to(scores.dtype)
        marginal = None if sinkhorn_marginal is None else \
            sinkhorn_marginal.to(scores.dtype)

        loss: Union[Tensor, float] = 0
        batch_codes, batch_soft = [], []
        for i, crop_id in enumerate(self.crops_for_assign):
            with torch.no_grad():
                out = scores[bs * crop_id:bs * (crop_id + 1)].detach()
                if return_usage:
                    batch_soft.append(F.softmax(out / self.epsilon, dim=1))
                out = self._with_queue(
                    i, out, embedding[bs * crop_id:bs * (crop_id + 1)],
                    prototypes.detach())
                q = self.codes(out, marginal)[-bs:]
                batch_codes.append(q)
            subloss: Union[Tensor, float] = 0
            for v in range(total):
                if v == crop_id:
                    continue
                log_p = F.log_softmax(
                    scores[bs * v:bs * (v + 1)] / self.temperature, dim=1)
                subloss -= torch.mean(torch.sum(q * log_p, dim=1))
            loss += subloss / (total - 1)
        loss /= len(self.crops_for_assign)

        losses = dict(loss_swav=cast(Tensor, loss))  # summed over the crops
        scalars, used = self._stats(torch.cat(batch_codes), prior)
        losses.update(scalars)
        usage = (global_mean_usage(torch.cat(batch_soft))
                 if return_usage else None)
        return losses, PrototypeStepStats(prototypes_used=used, usage=usage)

    @torch.no_grad()
    def _with_queue(self, i: int, out: Tensor, embedding: Tensor,
                    prototypes: Tensor) -> Tensor:
        """SwAV's queue (filled by ``SwAVHook``): the scores ``out`` (B, K)
        of assignment crop ``i``, with those of the queued embeddings
        prepended once it is full; this batch is pushed in."""
        if self.queue is None:
            return out
        bs = out.shape[0]
        if self.use_queue or not torch.all(self.queue[i, -1, :] == 0):
            self.use_queue = True
            out = torch.cat((self.queue[i] @ prototypes.t(), out))
        self.queue[i, bs:] = self.queue[i, :-bs].clone()
        self.queue[i, :bs] = embedding
        return out

    @torch.no_grad()
    def _stats(self, codes: Tensor,
               prior: Tensor) -> Tuple[Dict[str, Tensor], Tensor]:
        """Global scalars of the batch codes, and their argmax set (bool
        (K,)), from one all-reduce."""
        num_protos = codes.shape[1]
        used = codes.new_zeros(num_protos, dtype=torch.float64)
        used[codes.argmax(dim=1)] = 1.0
        # a fill on the device, not an upload of a Python list
        count = used.new_full((1, ), float(codes.shape[0]))
        totals = torch.cat([used, codes.double().sum(dim=0), count])
        all_reduce(totals, op='sum')
        mean_code = totals[num_protos:2 * num_protos] / totals[-1]
        used = totals[:num_protos] > 0
        return dict(
            num_prototypes_used=used.sum().to(codes.dtype),
            codes_prior_kl=kl_divergence(mean_code,
                                         prior.double()).to(codes.dtype)), used

    def extra_repr(self) -> str:
        return (f'epsilon={self.epsilon}, temperature={self.temperature}, '
                f'sinkhorn_iterations={self.sinkhorn_iterations}, '
                f'crops_for_assign={self.crops_for_assign}, '
                f'num_crops={self.num_crops}')
