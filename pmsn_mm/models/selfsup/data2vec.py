"""data2vec (vision): regress the teacher's averaged top blocks at masks."""
import math
from typing import Dict, List, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample
from torch import Tensor, nn

from ...utils.validation import check_choice, check_index_list
from ..utils.data2vec_targets import TARGET_NORMS, average_layer_targets
from ..utils.ema import EMATargetMixin, LinearMomentumEMA

LOSS_TYPES = ('smooth_l1', 'l2')


@MODELS.register_module()
class Data2VecVision(EMATargetMixin, BaseSelfSupervisor):
    """data2vec for images (Baevski et al., ICML 2022), as in the official
    data2vec vision code (facebookresearch/data2vec_vision,
    ``beit/engine_for_cyclical.py``, ``beit/modeling_cyclical.py``).

    The **teacher** (EMA of the student backbone, eval mode, no gradient)
    encodes the unmasked image; its ``target_layers`` outputs are averaged
    (:func:`average_layer_targets`). The **student** encodes the masked image
    (``data_sample.mask``, (h, w), from ``BEiTMaskGenerator``); its masked
    tokens go through the regression neck (official ``lm_head``). Loss:
    smooth-L1 or MSE at the masked positions.

    Args:
        backbone: Backbone config; needs ``forward_layers(x, mask)``, e.g.
            :class:`~pmsn_mm.models.backbones.Data2VecViT`.
        neck: Regression head config, e.g. ``dict(type='LinearNeck',
            in_channels=768, out_channels=768, norm_cfg=None)``.
        target_layers: Distinct 0-based teacher blocks to average.
            Defaults to ``(6, ..., 11)``, the paper's for ViT-B (App. E.1).
        target_layer_norm: Normalisation of each block output, one of
            ``'layer'`` (official default), ``'instance'`` or None.
        target_post_norm: Normalisation of the average (official: ``'layer'``).
        loss_type: ``'smooth_l1'`` (official) or ``'l2'``.
        loss_beta: Smooth-L1 beta, > 0 (official ViT-B command: 2.0).
        target_momentum: Initial EMA momentum m of the teacher (``m *
            teacher + (1 - m) * student``), in (0, 1) (official: 0.9998).
        target_momentum_end: Momentum reached linearly after 1.25x the run,
            in (0, 1]; None: constant (official). Defaults to None.
        **kwargs: ``BaseSelfSupervisor`` arguments (``init_cfg``, ...).
    """

    def __init__(self,
                 backbone: dict,
                 neck: dict,
                 target_layers: Sequence[int] = (6, 7, 8, 9, 10, 11),
                 target_layer_norm: Optional[str] = 'layer',
                 target_post_norm: Optional[str] = 'layer',
                 loss_type: str = 'smooth_l1',
                 loss_beta: float = 2.0,
                 target_momentum: float = 0.9998,
                 target_momentum_end: Optional[float] = None,
                 **kwargs) -> None:
        check_choice('target_layer_norm', target_layer_norm, TARGET_NORMS)
        check_choice('target_post_norm', target_post_norm, TARGET_NORMS)
        check_choice('loss_type', loss_type, LOSS_TYPES)
        if not (isinstance(loss_beta, (int, float)) and math.isfinite(
                loss_beta) and loss_beta > 0):
            raise ValueError(f'loss_beta must be in (0, inf) but is '
                             f'{loss_beta!r}.')
        if not 0 < target_momentum < 1:
            raise ValueError(f'target_momentum must be in (0, 1) but is '
                             f'{target_momentum}.')
        if target_momentum_end is None:
            target_momentum_end = target_momentum
        if not 0 < target_momentum_end <= 1:
            raise ValueError('target_momentum_end must be None or in (0, 1] '
                             f'but is {target_momentum_end}.')
        super().__init__(backbone=backbone, neck=neck, **kwargs)
        if not callable(getattr(self.backbone, 'forward_layers', None)):
            raise ValueError(
                'Data2VecVision needs a backbone with forward_layers(x, mask) '
                '(e.g. Data2VecViT), but the backbone is '
                f'{type(self.backbone).__name__}.')
        num_layers = len(self.backbone.layers)
        self.target_layers = check_index_list(
            'target_layers', target_layers, num_layers, 'block ',
            distinct=True, context=f' for this {num_layers}-block backbone')
        self.target_layer_norm = target_layer_norm
        self.target_post_norm = target_post_norm
        self.loss_type = loss_type
        self.loss_beta = float(loss_beta)
        # mmengine's EMA momentum weighs the *online* parameters
        self.target_net = LinearMomentumEMA(
            self.backbone,
            momentum=1.0 - float(target_momentum),
            end_momentum=1.0 - float(target_momentum_end))
        self.target_net.eval()

    def ema_source(self) -> nn.Module:
        """The online encoder the teacher averages: the student backbone."""
        return self.backbone

    def train(self, mode: bool = True) -> 'Data2VecVision':
        """Set the student's mode; the teacher always stays in eval mode."""
        super().train(mode)
        self.target_net.eval()
        return self

    @torch.no_grad()
    def compute_targets(self, img: Tensor) -> Tensor:
        """Teacher targets for every patch of the unmasked images.

        Args:
            img: Tensor of shape (B, C, H, W).

        Returns:
            Float tensor of shape (B, N, D): the normalised average of the
            teacher's ``target_layers`` outputs, class token dropped.
        """
        _, blocks = self.target_net.module.forward_layers(img, None)
        extra = self.backbone.num_extra_tokens
        return average_layer_targets(
            [blocks[i][:, extra:] for i in self.target_layers],
            self.target_layer_norm, self.target_post_norm)

    def loss(self, inputs: Union[Tensor, List[Tensor]],
             data_samples: List[DataSample]) -> Dict[str, Tensor]:
        """data2vec loss of a batch of masked images.

        Args:
            inputs: Tensor of shape (B, C, H, W), or a list holding it.
            data_samples: B samples with a ``mask`` (h, w) (1 = masked patch).

        Returns:
            ``loss_regression`` and the statistics ``num_masked`` (mean
            masked patches per image) and ``pred_std`` (mean over features
            of the std of the predictions over masked tokens).
        """
        self.check_target_updated()
        img = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        if not data_samples or 'mask' not in data_samples[0]:
            raise ValueError(
                'Data2VecVision needs data_samples with a `mask`; add '
                'BEiTMaskGenerator (or SimMIMMaskGenerator) to the pipeline '
                'before PackInputs.')
        mask = torch.stack([ds.mask for ds in data_samples]).to(img.device)
        mask = mask.reshape(mask.shape[0], -1).bool()  # (B, N)

        # Every token is predicted and the masked ones are weighted in: the
        # same loss as over the masked tokens alone (tokens[mask]), but with
        # no data-dependent shape, i.e. no host sync.
        tokens, _ = self.backbone.forward_layers(img, mask)
        tokens = tokens[:, self.backbone.num_extra_tokens:]  # (B, N, D)
        pred = self.neck(tokens.flatten(0, 1))[0].float()
        pred = pred.reshape(*tokens.shape[:2], -1)  # (B, N, D)
        targets = self.compute_targets(img)  # (B, N, D)
        if self.loss_type == 'smooth_l1':
            elementwise = F.smooth_l1_loss(pred, targets, beta=self.loss_beta,
                                           reduction='none')
        else:
            elementwise = F.mse_loss(pred, targets, reduction='none')
        weight = mask.unsqueeze(-1).to(pred.dtype)  # (B, N, 1)
        num_masked = weight.sum()  # M
        loss = (elementwise * weight).sum() / (num_masked * pred.shape[-1])
        with torch.no_grad():  # std over the masked tokens, per feature
            pred_mean = (pred * weight).sum(dim=(0, 1)) / num_masked
            pred_var = (((pred - pred_mean) ** 2) * weight).sum(
                dim=(0, 1)) / num_masked
        self.mark_target_update_due()
        return dict(
            loss_regression=loss,
            num_masked=mask.sum(dim=1).float().mean(),
            pred_std=pred_var.sqrt().mean())
