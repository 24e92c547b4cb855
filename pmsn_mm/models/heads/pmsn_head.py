"""Prototype head of (P)MSN: prototypes, probabilities and the cluster prior.
"""
import math
from typing import Dict, Optional, Union

import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from mmpretrain.registry import MODELS
from torch import Tensor, nn

#: Settings of the head that older configs gave to ``PMSNLoss``.
HEAD_SETTINGS = ('temperature', 'label_smoothing', 'prior')


def prototype_log_probabilities(x: Tensor,
                                prototypes: Tensor,
                                temperature: float,
                                label_smoothing: float = 0.0) -> Tensor:
    """Log of MSN's soft-nearest-neighbour prototype probabilities.

    ``p = softmax(normalize(x) @ normalize(prototypes).T / temperature)
    @ proto_labels`` with ``proto_labels`` the label-smoothed identity
    (off-diagonal ``s / K``, diagonal ``1 - s + s / K``), i.e.
    ``p = (1 - s) * softmax(...) + s / K`` (paper eq. (msn): ``p_i``).
    Computed in log space (``log_softmax``, ``logaddexp``), so ``log p`` is
    finite even where ``p`` underflows.

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


def _upcast(x: Tensor) -> Tensor:
    """Half precision (AMP) is computed in float32, as in MSN."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


@MODELS.register_module()
class PMSNHead(BaseModule):
    """Learnable prototypes, their probabilities and the cluster prior of
    PMSN (paper eq. (msn_prior)); the loss term is ``PMSNLoss``.

    The head is the one public API of the prototype probabilities:
    :meth:`log_probabilities` / :meth:`probabilities` (``p_i`` of eq. (msn),
    with this head's temperature and label smoothing) and
    :meth:`prior_probs` (the prior over its K prototypes). :meth:`loss`
    computes the anchor log-probabilities (with gradient) and the target
    probabilities (without), then calls the loss with them and the prior,
    as mmpretrain heads compute logits and call their loss.

    The prototypes are initialised uniformly in ``±sqrt(1 / D)`` (official
    MSN) from the global torch RNG in ``__init__``; :meth:`init_weights`
    keeps them (it only runs ``init_cfg``, e.g. ``Pretrained``).
    Prototypes should get no weight decay, as in MSN::

        optim_wrapper = dict(
            ...,
            paramwise_cfg=dict(
                custom_keys={'prototypes': dict(decay_mult=0.0)}))

    Checkpoints written before the prior moved here (its buffers under
    ``head.loss_module.prior.``) load with their keys renamed.

    Args:
        num_prototypes: Number of prototypes K, >= 1.
        in_channels: Embedding dim D, >= 1. Defaults to 256.
        temperature: Cosine-similarity temperature, > 0. Defaults to 0.1.
        label_smoothing: Prototype label smoothing, in [0, 1).
            Defaults to 0.0.
        prior: Config of a prior (``UniformPrior``, ``PowerLawPrior``,
            ``ClassPrior``, ``FilePrior``, ``AdaptivePowerLawPrior``) or a
            built ``BasePrior``. Defaults to ``dict(type='UniformPrior')``
            (MSN).
        loss: Config of the loss (or a built module) called as
            ``loss(anchor_log_probs, target_probs, prior)``. Defaults to
            ``dict(type='PMSNLoss')``.
        init_cfg: mmengine init config. Defaults to None.
    """

    def __init__(self,
                 num_prototypes: int,
                 in_channels: int = 256,
                 temperature: float = 0.1,
                 label_smoothing: float = 0.0,
                 prior: Optional[Union[dict, nn.Module]] = None,
                 loss: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[dict] = None) -> None:
        super().__init__(init_cfg=init_cfg)
        for name, value in (('num_prototypes', num_prototypes), ('in_channels',
                                                                 in_channels)):
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 1:
                raise ValueError(f'{name} must be an int >= 1 but is '
                                 f'{value!r}.')
        if not (isinstance(temperature, (int, float))
                and math.isfinite(temperature) and temperature > 0):
            raise ValueError(
                f'temperature must be in (0, inf) but is {temperature!r}.')
        if not (isinstance(label_smoothing,
                           (int, float)) and 0 <= label_smoothing < 1):
            raise ValueError('label_smoothing must be in [0, 1) but is '
                             f'{label_smoothing!r}.')
        if loss is None:
            loss = dict(type='PMSNLoss')
        moved = [k for k in HEAD_SETTINGS
                 if isinstance(loss, dict) and k in loss]
        if moved:
            raise ValueError(
                f'{moved} are settings of PMSNHead, not of its loss: write '
                f"head=dict(type='PMSNHead', {moved[0]}=...), not "
                f'head.loss.{moved[0]}.')
        self.num_prototypes = num_prototypes
        self.in_channels = in_channels
        self.temperature = float(temperature)
        self.label_smoothing = float(label_smoothing)
        if prior is None:
            prior = dict(type='UniformPrior')
        self.prior = MODELS.build(prior) if isinstance(prior, dict) else prior
        self.loss_module = MODELS.build(loss) if isinstance(loss,
                                                            dict) else loss
        self.prototypes = nn.Parameter(
            torch.empty(num_prototypes, in_channels))
        bound = math.sqrt(1.0 / in_channels)
        nn.init.uniform_(self.prototypes, -bound, bound)

    def log_probabilities(self, z: Tensor) -> Tensor:
        """``log p`` of embeddings against the prototypes (with gradient
        to both).

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

    def prior_probs(self,
                    device: Optional[torch.device] = None,
                    dtype: Optional[torch.dtype] = None) -> Tensor:
        """The prior over the K prototypes.

        Args:
            device: Device; defaults to the prototypes'.
            dtype: dtype; defaults to the prototypes'.

        Returns:
            Tensor of shape (K,) summing to 1.
        """
        return self.prior.probs(self.num_prototypes,
                                device or self.prototypes.device,
                                dtype or self.prototypes.dtype)

    def loss(self, anchors: Tensor, targets: Tensor) -> Dict[str, Tensor]:
        """The PMSN loss of anchor and target embeddings.

        Args:
            anchors: Tensor of shape (B * V, D), view-major.
            targets: Tensor of shape (B, D); used without gradient.

        Returns:
            The loss module's dict (``loss_ce``, ``loss_prior``, stats...).
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
        prototypes = _upcast(self.prototypes)
        anchor_log_probs = prototype_log_probabilities(
            _upcast(anchors), prototypes, self.temperature,
            self.label_smoothing)
        with torch.no_grad():
            target_probs = prototype_log_probabilities(
                _upcast(targets.detach()), prototypes.detach(),
                self.temperature, self.label_smoothing).exp()
        return self.loss_module(anchor_log_probs, target_probs, self.prior)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args,
                              **kwargs) -> None:
        # the prior (and a learned prior's buffers) lived in the loss
        old = prefix + 'loss_module.prior.'
        for key in [k for k in state_dict if k.startswith(old)]:
            state_dict[prefix + 'prior.' + key[len(old):]] = \
                state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return (f'num_prototypes={self.num_prototypes}, '
                f'in_channels={self.in_channels}, '
                f'temperature={self.temperature}, '
                f'label_smoothing={self.label_smoothing}')
