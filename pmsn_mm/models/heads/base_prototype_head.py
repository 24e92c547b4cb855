"""What PMSN's and PSwAV's heads share: learnable prototypes and the cluster
prior they are matched to."""
import math
from typing import Dict, Optional, Union

import torch
from mmengine.model import BaseModule
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import check_int
from ..losses.step_stats import PrototypeStepStats
from ..priors import BasePrior


def build_prior(prior: Optional[Union[dict, BasePrior]],
                num_prototypes: Optional[int]) -> BasePrior:
    """Build a prior config for K prototypes, or check a built prior's.

    K is configured once, on the head (another K in the prior is an error);
    with ``num_prototypes=None`` it comes from a prior that counts it in the
    data (``ClassPrior``, ``ImageFolderPrior``).

    Args:
        prior: Config (``dict(type='PowerLawPrior', tau=0.5)``), a built
            ``BasePrior`` or None (``UniformPrior``).
        num_prototypes: The head's K, or None (the prior's).

    Returns:
        The prior.
    """
    if prior is None:
        prior = dict(type='UniformPrior')
    if num_prototypes is None:
        if isinstance(prior, dict):
            kind = MODELS.get(prior.get('type'))
            if not getattr(kind, 'counts_prototypes', False):
                raise ValueError(
                    'num_prototypes=None takes K from a prior that counts it '
                    'in the data (ClassPrior, ImageFolderPrior), but the '
                    f'prior is {prior.get("type")!r}; set the head\'s '
                    'num_prototypes.')
            prior = MODELS.build(prior, default_args=dict(num_prototypes=None))
        if not isinstance(prior, BasePrior):
            raise TypeError('prior must be a BasePrior config or module, but '
                            f'is {type(prior).__name__}.')
        return prior
    if isinstance(prior, dict):
        given = prior.get('num_prototypes', num_prototypes)
        if given != num_prototypes:
            raise ValueError(
                f'prior num_prototypes={given!r} differs from the head\'s '
                f'num_prototypes={num_prototypes}: K is set once, on the '
                'head; remove num_prototypes from the prior config.')
        prior = MODELS.build(
            prior, default_args=dict(num_prototypes=num_prototypes))
    if not isinstance(prior, BasePrior):
        raise TypeError('prior must be a BasePrior config or module, but is '
                        f'{type(prior).__name__}.')
    if prior.num_prototypes != num_prototypes:
        raise ValueError(
            f'{type(prior).__name__} has num_prototypes='
            f'{prior.num_prototypes} but the head has num_prototypes='
            f'{num_prototypes}.')
    return prior


class BasePrototypeHead(BaseModule):
    """Learnable prototypes ``(K, D)``, the cluster prior over them and the
    loss that uses both (PMSN: ``PMSNHead``; PSwAV: ``PSwAVHead``).

    The head owns all state: the prototypes (uniform in ``±sqrt(1 / D)``,
    as official MSN) and the prior; the loss is a function of tensors it
    passes in. :meth:`finish_step` updates a learned prior; hooks read
    :meth:`step_statistics`. Prototypes should get no weight decay (MSN):
    ``paramwise_cfg=dict(custom_keys={'prototypes': dict(decay_mult=0.0)})``.

    Args:
        num_prototypes: Number of prototypes K, >= 1, or None: the prior's,
            counted in the data (``ClassPrior``, ``ImageFolderPrior``).
        in_channels: Embedding dim D, >= 1.
        prior: Config of a prior (built with the head's K) or a built
            ``BasePrior``. None is ``UniformPrior``.
        loss: Loss config or module; None: :attr:`default_loss`.
        init_cfg: mmengine init config. Defaults to None.
    """

    #: The loss config used when ``loss`` is None.
    default_loss: dict = {}

    def __init__(self,
                 num_prototypes: Optional[int],
                 in_channels: int,
                 prior: Optional[Union[dict, BasePrior]] = None,
                 loss: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[dict] = None) -> None:
        super().__init__(init_cfg=init_cfg)
        if num_prototypes is not None:
            num_prototypes = check_int('num_prototypes', num_prototypes, 1)
        self.in_channels = check_int('in_channels', in_channels, 1)
        self.prior = build_prior(prior, num_prototypes)
        self.num_prototypes = self.prior.num_prototypes
        if loss is None:
            loss = dict(self.default_loss)
        self.loss_module = MODELS.build(loss) if isinstance(loss,
                                                            dict) else loss
        self.prototypes = nn.Parameter(
            torch.empty(self.num_prototypes, self.in_channels))
        bound = math.sqrt(1.0 / self.in_channels)
        nn.init.uniform_(self.prototypes, -bound, bound)
        self._step_stats: Optional[PrototypeStepStats] = None

    def sinkhorn_marginal(self, dtype: torch.dtype) -> Optional[Tensor]:
        """The prior's Sinkhorn marginal in ``dtype`` (None: uniform)."""
        marginal = self.prior.sinkhorn_marginal()
        return None if marginal is None else marginal.to(dtype)

    def finish_step(self, losses: Dict[str, Tensor],
                    stats: PrototypeStepStats,
                    dtype: torch.dtype) -> Dict[str, Tensor]:
        """After the loss: update a learned prior, keep the statistics for
        :meth:`step_statistics` and add the prior's to the losses.

        Args:
            losses: The loss's losses and logged scalars (extended).
            stats: The loss's statistics.
            dtype: dtype of the logged prior statistics.

        Returns:
            ``losses`` with the prior's statistics (e.g. ``prior_tau``).
        """
        if stats.usage is not None:  # in the training step: no host sync
            self.prior.update_usage(stats.usage, check=False)
        if self.training:
            self._step_stats = stats
        losses.update({
            k: v.detach().to(dtype)
            for k, v in self.prior.statistics().items()
        })
        return losses

    def step_statistics(self) -> Optional[PrototypeStepStats]:
        """The statistics of the last training step's loss (global batch,
        detached; ``PrototypeUsageHook`` reads them), or None before the
        first training step."""
        return self._step_stats

    @property
    def learns_prior_now(self) -> bool:
        """Whether this step's usage updates a learned prior (training)."""
        return self.prior.learns_from_usage and self.training

    def extra_repr(self) -> str:
        return (f'num_prototypes={self.num_prototypes}, '
                f'in_channels={self.in_channels}')
