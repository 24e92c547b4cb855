"""Several linear probes on the same frozen features, trained in one run."""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample
from torch import Tensor, nn

from ...utils.validation import check_int

#: Probe types: a plain Linear, and BatchNorm (no affine by default) + Linear.
PROBE_TYPES = ('linear', 'bn_linear')


class BNLinear(nn.Module):
    """BatchNorm followed by a Linear layer (VISSL ``eval_mlp``).

    With ``bn_channels < in_channels`` the input is viewed as (B,
    bn_channels, -1) and normalised per channel, as VISSL's
    ``BatchNorm2d(2048)`` behind SEER's 8192-d representation.

    Args:
        in_channels: Feature dim.
        num_classes: Output dim.
        bn_channels: Number of normalised channels; divides ``in_channels``.
        affine: Learnable BN scale and shift.
        eps: BN epsilon.
        momentum: BN running-statistics momentum.
    """

    def __init__(self, in_channels: int, num_classes: int, bn_channels: int,
                 affine: bool, eps: float, momentum: float) -> None:
        super().__init__()
        self.bn_channels = bn_channels
        self.bn = nn.BatchNorm1d(
            bn_channels, eps=eps, momentum=momentum, affine=affine)
        self.fc = nn.Linear(in_channels, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape (B, num_classes) from features of shape (B, in)."""
        if self.bn_channels != x.shape[1]:
            x = self.bn(x.view(x.shape[0], self.bn_channels, -1)).flatten(1)
        else:
            x = self.bn(x)
        return self.fc(x)


@MODELS.register_module()
class MultiLinearProbeHead(BaseModule):
    """Linear probes of the paper's evaluation protocol (App. E.2, VISSL).

    "We attach 2 linear heads per chosen representation, one composed of a
    single linear layer, and one with an added batch normalization before the
    linear layer." Trained together, one ``loss_<name>`` each (no shared
    parameter). :meth:`predict` writes ``pred_score_<name>`` per probe and
    the first probe's ``pred_score`` / ``pred_label``. Input: a tuple whose
    last element has shape (B, in_channels).

    Args:
        num_classes: Number of classes, >= 1.
        in_channels: Feature dim, >= 1.
        probes: Probe types (their names), each once, from
            :data:`PROBE_TYPES`. Defaults to ``('linear', 'bn_linear')``.
        bn_channels: BatchNorm channels of ``bn_linear``, dividing
            ``in_channels`` (VISSL's 8192-d ResNet: 2048). Defaults to
            ``in_channels``.
        bn_affine: Learnable BN scale/shift. Defaults to False (MAE's probe;
            VISSL's is affine, as the benchmark configs set).
        bn_eps: BN epsilon (VISSL: 1e-5).
        bn_momentum: BN momentum (VISSL: 0.1).
        loss: Loss config or module. Defaults to ``CrossEntropyLoss``.
        init_cfg: mmengine init config. Defaults to Linear weights normal
            (std 0.01), biases 0 (MAE's probe); ``[]`` keeps PyTorch's
            default init (VISSL's, as the benchmark configs do).
    """

    def __init__(self,
                 num_classes: int,
                 in_channels: int,
                 probes: Sequence[str] = PROBE_TYPES,
                 bn_channels: Optional[int] = None,
                 bn_affine: bool = False,
                 bn_eps: float = 1e-5,
                 bn_momentum: float = 0.1,
                 loss: Optional[Union[dict, nn.Module]] = None,
                 init_cfg: Optional[Union[dict, list]] = None) -> None:
        if init_cfg is None:
            init_cfg = dict(type='Normal', layer='Linear', std=0.01, bias=0.0)
        super().__init__(init_cfg=init_cfg)
        check_int('num_classes', num_classes, 1)
        check_int('in_channels', in_channels, 1)
        probes = [probes] if isinstance(probes, str) else list(probes)
        if not probes or any(p not in PROBE_TYPES for p in probes) or \
                len(set(probes)) != len(probes):
            raise ValueError(f'probes must be a non-empty sequence of '
                             f'distinct types from {PROBE_TYPES}, but is '
                             f'{probes!r}.')
        bn_channels = in_channels if bn_channels is None else bn_channels
        check_int('bn_channels', bn_channels, 1)
        if in_channels % bn_channels:
            raise ValueError(f'bn_channels={bn_channels} must divide '
                             f'in_channels={in_channels}.')
        if loss is None:
            loss = dict(type='CrossEntropyLoss', loss_weight=1.0)
        self.num_classes = num_classes
        self.in_channels = in_channels
        self.probe_names = tuple(probes)
        self.loss_module = MODELS.build(loss) if isinstance(loss,
                                                            dict) else loss
        self.probes = nn.ModuleDict()
        for name in self.probe_names:
            if name == 'linear':
                self.probes[name] = nn.Linear(in_channels, num_classes)
            else:
                self.probes[name] = BNLinear(in_channels, num_classes,
                                             bn_channels, bn_affine, bn_eps,
                                             bn_momentum)

    def pre_logits(self, feats: Union[Tensor, Tuple[Tensor]]) -> Tensor:
        """The features the probes see.

        Args:
            feats: A Tensor (B, in_channels), or a tuple of them (last used).

        Returns:
            Tensor of shape (B, in_channels).
        """
        x = feats[-1] if isinstance(feats, (tuple, list)) else feats
        if x.dim() != 2 or x.shape[1] != self.in_channels:
            raise ValueError(
                f'MultiLinearProbeHead(in_channels={self.in_channels}) '
                f'expects features of shape (B, {self.in_channels}) but got '
                f'{tuple(x.shape)}; pool feature maps with a neck (e.g. '
                'AdaptivePoolNeck) and check in_channels.')
        return x

    def forward(self,
                feats: Union[Tensor, Tuple[Tensor]]) -> Dict[str, Tensor]:
        """Logits of every probe.

        Args:
            feats: See :meth:`pre_logits`.

        Returns:
            Dict probe name -> Tensor of shape (B, num_classes).
        """
        x = self.pre_logits(feats)
        return {name: self.probes[name](x) for name in self.probe_names}

    def loss(self, feats: Union[Tensor, Tuple[Tensor]],
             data_samples: List[DataSample]) -> Dict[str, Tensor]:
        """Cross-entropy of every probe, plus its batch top-1 (not a loss).

        Args:
            feats: See :meth:`pre_logits`.
            data_samples: Data samples with ``gt_label``.

        Returns:
            ``loss_<name>`` per probe and ``<name>/train_top1`` (percent).
        """
        logits = self(feats)
        target = torch.cat([ds.gt_label for ds in data_samples]).to(
            next(iter(logits.values())).device)
        losses = dict()
        for name, score in logits.items():
            losses[f'loss_{name}'] = self.loss_module(
                score, target, avg_factor=score.size(0))
            with torch.no_grad():
                losses[f'{name}/train_top1'] = (score.argmax(
                    dim=1) == target).float().mean() * 100
        return losses

    def predict(
        self,
        feats: Union[Tensor, Tuple[Tensor]],
        data_samples: Optional[List[Optional[DataSample]]] = None
    ) -> List[DataSample]:
        """Softmax scores of every probe, written into the data samples.

        Args:
            feats: See :meth:`pre_logits`.
            data_samples: Data samples to fill, or None for new ones.

        Returns:
            Data samples with ``pred_score_<name>`` per probe and
            ``pred_score`` / ``pred_label`` of the first probe.
        """
        scores = {
            name: F.softmax(logit, dim=1).detach()
            for name, logit in self(feats).items()
        }
        first = scores[self.probe_names[0]]
        if data_samples is None:
            data_samples = [None] * first.size(0)
        out = []
        for i, data_sample in enumerate(data_samples):
            if data_sample is None:
                data_sample = DataSample()
            for name in self.probe_names:
                data_sample.set_field(
                    scores[name][i], f'pred_score_{name}', dtype=torch.Tensor)
            data_sample.set_pred_score(first[i]).set_pred_label(
                first[i].argmax(dim=0, keepdim=True))
            out.append(data_sample)
        return out
