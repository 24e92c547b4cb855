"""PMSN: Masked Siamese Networks with an arbitrary cluster prior."""
import inspect
from typing import Dict, List, Tuple, Union

import torch
import torch.nn as nn
from mmengine.optim import OptimWrapper
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample
from torch import Tensor

from ...utils.validation import check_int, check_number
from ..utils.amp import autocast_off
from ..utils.compile import update_params_eagerly
from ..utils.ema import EMATargetMixin, LinearMomentumEMA
from ..utils.patch_drop import check_mask_ratio
from .prototype_embed import PrototypeEmbedMixin


@MODELS.register_module()
class PMSN(PrototypeEmbedMixin, EMATargetMixin, BaseSelfSupervisor):
    """Prior Matching for Siamese Networks (Assran et al., ICLR 2023,
    arXiv:2210.07277, eq. (9)).

    As the official MSN step, views ``[target, random_1..R, focal_1..F]``:
    the target is encoded by an EMA copy of backbone + neck without
    gradient; the anchors by the online encoder, the random views with
    patch-drop (``mask_ratio``); the head adds ``lambda * KL(p̄ ‖ prior)``
    (:class:`PMSNLoss`). MSN is PMSN with ``UniformPrior`` (a config).

    Args:
        backbone: Backbone config; ``mask_ratio > 0`` needs one whose
            ``forward`` takes it (:class:`~pmsn_mm.models.backbones.MSNViT`,
            a timm ViT in ``PooledTIMMBackbone``).
        neck: Projector config, e.g. ``MSNProjector``.
        head: Prototype head config, e.g. ``PMSNHead``.
        num_random_views: R, the number of masked anchor views (≥ 1).
        mask_ratio: Patch tokens dropped from the random views, in [0, 1).
        target_momentum: Initial EMA momentum m of the target (``m * target
            + (1 - m) * online``), in (0, 1). Defaults to 0.996 (MSN).
        target_momentum_end: Momentum reached after 1.25x the run, in
            (0, 1]. Defaults to 1.0 (MSN).
        **kwargs: ``BaseSelfSupervisor`` arguments (``init_cfg``, ...).
    """

    def __init__(self,
                 backbone: dict,
                 neck: dict,
                 head: dict,
                 num_random_views: int = 1,
                 mask_ratio: float = 0.15,
                 target_momentum: float = 0.996,
                 target_momentum_end: float = 1.0,
                 **kwargs) -> None:
        num_random_views = check_int('num_random_views', num_random_views, 1)
        mask_ratio = check_mask_ratio(mask_ratio)
        target_momentum = check_number('target_momentum', target_momentum, 0,
                                       1, low_open=True, high_open=True)
        target_momentum_end = check_number('target_momentum_end',
                                           target_momentum_end, 0, 1,
                                           low_open=True)
        super().__init__(backbone=backbone, neck=neck, head=head, **kwargs)
        # a backbone may say whether it masks (PooledTIMMBackbone: only
        # token models), else its forward must take mask_ratio
        masks = getattr(self.backbone, 'supports_mask_ratio', None)
        if masks is None:
            masks = 'mask_ratio' in inspect.signature(
                self.backbone.forward).parameters
        if mask_ratio > 0 and not masks:
            raise ValueError(
                f'mask_ratio={mask_ratio} needs a token-based backbone whose '
                "forward takes mask_ratio (MSNViT, mmpretrain's "
                'VisionTransformer with patch-drop), but the backbone is '
                f'{type(self.backbone).__name__}; use MSNViT (or a timm ViT '
                'in PooledTIMMBackbone), or set mask_ratio=0 for backbones '
                'without patch tokens (ResNet, timm CNNs).')
        self.num_random_views = num_random_views
        self.mask_ratio = mask_ratio
        # an instance attribute from the start: under compile=True the
        # step's guards would otherwise see it appear after the first step
        # and recompile the whole forward once
        self._target_update_due = False
        # mmengine's EMA momentum weighs the *online* parameters
        self.target_net = LinearMomentumEMA(
            nn.Sequential(self.backbone, self.neck),
            momentum=1.0 - target_momentum,
            end_momentum=1.0 - target_momentum_end)

    def ema_source(self) -> nn.Module:
        """The online encoder the target averages: backbone + neck."""
        return nn.Sequential(self.backbone, self.neck)

    def encoder(self, target: bool = False) -> Tuple[nn.Module, nn.Module]:
        """``(backbone, neck)``; with ``target`` those of the EMA target."""
        if target:
            return tuple(self.target_net.module)
        return self.backbone, self.neck

    def _encode(self, views: List[Tensor], mask_ratio: float) -> Tensor:
        """Online backbone + neck on V same-size views (B, C, H, W) in one
        forward: (V * B, D), view-major."""
        x = torch.cat(views)
        feats = self.backbone(x, mask_ratio=mask_ratio) \
            if mask_ratio > 0 else self.backbone(x)
        return self.neck(feats)[0]

    def train_step(self, data: Union[dict, tuple, list],
                   optim_wrapper: OptimWrapper) -> Dict[str, Tensor]:
        """mmengine's ``BaseModel.train_step`` with the parameter update
        run eagerly, so that ``compile=True`` compiles the rest
        (:func:`~pmsn_mm.models.utils.update_params_eagerly`).

        Args:
            data: A batch from the dataloader.
            optim_wrapper: The wrapper that updates the parameters.

        Returns:
            The log variables of ``parse_losses``.
        """
        with optim_wrapper.optim_context(self):
            data = self.data_preprocessor(data, True)
            losses = self._run_forward(data, mode='loss')
        parsed_losses, log_vars = self.parse_losses(losses)
        update_params_eagerly(optim_wrapper, parsed_losses)
        return log_vars

    def loss(self, inputs: List[Tensor],
             data_samples: List[DataSample]) -> Dict[str, Tensor]:
        """PMSN loss of a batch of multi-view inputs.

        Args:
            inputs: ``1 + R + F`` views (B, C, H, W): target, random, focal.
            data_samples: Unused (self-supervised).

        Returns:
            Losses and statistics of :class:`PMSNLoss`, plus
            ``target_momentum`` of the coming target update (a float64 CPU
            tensor: no device read).
        """
        self.check_target_updated()
        if not isinstance(inputs, (list, tuple)) or \
                len(inputs) < 1 + self.num_random_views:
            got = len(inputs) if isinstance(inputs, (list, tuple)) else 1
            raise ValueError(
                f'PMSN needs 1 target + num_random_views='
                f'{self.num_random_views} random views (+ focal views), but '
                f'got {got} views; check MultiView num_views in the pipeline.')
        target_view = inputs[0]
        random_views = list(inputs[1:1 + self.num_random_views])
        focal_views = list(inputs[1 + self.num_random_views:])

        with torch.no_grad():
            targets = self.target_net(target_view)[0]

        anchor_parts = [self._encode(random_views, self.mask_ratio)]
        if focal_views:
            anchor_parts.append(self._encode(focal_views, 0.0))
        anchors = torch.cat(anchor_parts)
        # the prototype probabilities and the loss in float32 (the head
        # upcasts its inputs; autocast would cast its matmul and, on the
        # CPU, its log_softmax back to the low dtype)
        with autocast_off(anchors.device.type):
            losses = self.head.loss(anchors, targets)
        # a host (CPU) tensor from the host counter: logging it reads no
        # device value and copies nothing to the device
        losses['target_momentum'] = torch.tensor(
            self.next_target_momentum(), dtype=torch.float64)
        self.mark_target_update_due()
        return losses
