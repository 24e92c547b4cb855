"""Prototype head of (P)MSN: prototypes, probabilities and the prior."""
import math
from typing import Dict, Optional, Union

import torch
import torch.nn.functional as F
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import check_number, check_positive
from ..priors import BasePrior
from ..utils.amp import upcast
from .base_prototype_head import BasePrototypeHead


def prototype_log_probabilities(x: Tensor,
                                prototypes: Tensor,
                                temperature: float,
                                label_smoothing: float = 0.0) -> Tensor:
    """Log of MSN's soft-nearest-neighbour prototype probabilities.

    ``p = softmax(normalize(x) @ normalize(prototypes).T / temperature) @
    proto_labels`` with ``proto_labels`` the label-smoothed identity
    (off-diagonal ``s / K``, diagonal ``1 - s + s / K``), i.e. ``p = (1 - s) *
    softmax(...) + s / K`` (``p_i`` of Assran et al., ICLR 2023,
    arXiv:2210.07277, eq. (6)). Computed in log space (``log_softmax``,
    ``logaddexp``), so ``log p`` is finite even where ``p`` underflows.

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


@MODELS.register_module()
class PMSNHead(BasePrototypeHead):
    """Learnable prototypes, their probabilities and the cluster prior of
    PMSN (paper eq. (9)); the loss term is ``PMSNLoss``.

    The one public API of the prototype probabilities:
    :meth:`log_probabilities` / :meth:`probabilities` (``p_i`` of eq. (6));
    :meth:`loss` passes anchor log-probabilities (with gradient), target
    probabilities (without) and ``head.prior`` to the loss.

    Args:
        num_prototypes: Number of prototypes K, >= 1, or None (K
            from the prior: see :class:`BasePrototypeHead`).
        in_channels: Embedding dim D, >= 1. Defaults to 256.
        temperature: Cosine-similarity temperature, > 0. Defaults to 0.1.
        label_smoothing: Prototype label smoothing, in [0, 1). Defaults to 0.
        prior: Config of a prior or a built ``BasePrior``. Defaults to
            ``dict(type='UniformPrior')`` (MSN).
        loss: Config of the loss (or a built module), with ``PMSNLoss``'s
            interface. Defaults to ``dict(type='PMSNLoss')``.
        init_cfg: mmengine init config. Defaults to None.
    """

    default_loss = dict(type='PMSNLoss')

    def __init__(self,
                 num_prototypes: Optional[int],
                 in_channels: int = 256,
                 temperature: float = 0.1,
                 label_smoothing: float = 0.0,
                 prior: Optional[Union[dict, BasePrior]] = None,
                 loss: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[dict] = None) -> None:
        super().__init__(num_prototypes, in_channels, prior, loss, init_cfg)
        self.temperature = check_positive('temperature', temperature)
        self.label_smoothing = check_number(
            'label_smoothing', label_smoothing, 0, 1, high_open=True)

    def log_probabilities(self, z: Tensor) -> Tensor:
        """``log p`` of embeddings (gradient to them and the prototypes).

        Args:
            z: Tensor of shape (N, D).

        Returns:
            Tensor of shape (N, K).
        """
        return prototype_log_probabilities(z, self.prototypes,
                                           self.temperature,
                                           self.label_smoothing)

    def probabilities(self, z: Tensor) -> Tensor:
        """Prototype probabilities ``p`` of embeddings.

        Args:
            z: Tensor of shape (N, D).

        Returns:
            Tensor of shape (N, K), rows sum to 1.
        """
        return self.log_probabilities(z).exp()

    # eager under torch.compile (mmengine's compile=True): the backbone and
    # projector compile (docs/distributed.md, torch.compile)
    @torch.compiler.disable
    def loss(self, anchors: Tensor, targets: Tensor) -> Dict[str, Tensor]:
        """The PMSN loss of anchor and target embeddings.

        Args:
            anchors: Tensor of shape (B * V, D), view-major.
            targets: Tensor of shape (B, D); used without gradient.

        Returns:
            The loss module's scalars (``loss_ce``, ``loss_prior``,
            statistics) and the learned prior's statistics.
        """
        shapes = (f'anchors {tuple(anchors.shape)}, targets '
                  f'{tuple(targets.shape)}, prototypes '
                  f'{tuple(self.prototypes.shape)}')
        if anchors.dim() != 2 or targets.dim() != 2:
            raise ValueError('anchors (B * V, D), targets (B, D) and '
                             f'prototypes (K, D) must be 2-D, got {shapes}.')
        if targets.shape[0] == 0 or anchors.shape[0] % targets.shape[0]:
            raise ValueError('anchors rows (B * V) must be a positive '
                             f'multiple of targets rows (B), got {shapes}.')
        if not anchors.shape[1] == targets.shape[1] == self.in_channels:
            raise ValueError('anchors, targets and prototypes must have the '
                             f'same feature dim D, got {shapes}.')
        prototypes = upcast(self.prototypes)
        anchor_log_probs = prototype_log_probabilities(
            upcast(anchors), prototypes, self.temperature,
            self.label_smoothing)
        with torch.no_grad():
            target_probs = prototype_log_probabilities(
                upcast(targets.detach()), prototypes.detach(),
                self.temperature, self.label_smoothing).exp()
        dtype = anchor_log_probs.dtype
        losses, stats = self.loss_module(
            anchor_log_probs,
            target_probs,
            self.prior.probs.to(dtype),
            sinkhorn_marginal=self.sinkhorn_marginal(dtype),
            return_usage=self.learns_prior_now)
        return self.finish_step(losses, stats, dtype)

    def extra_repr(self) -> str:
        return (super().extra_repr() + f', temperature={self.temperature}, '
                f'label_smoothing={self.label_smoothing}')
