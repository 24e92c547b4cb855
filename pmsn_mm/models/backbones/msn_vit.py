"""Vision Transformer with MSN patch-drop (the anchor views' masking)."""
from collections import OrderedDict
from typing import Optional, Tuple, cast

import numpy as np
import torch
from mmpretrain.models.backbones import VisionTransformer
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ..utils.patch_drop import PatchDrop, check_mask_ratio


@MODELS.register_module()
class MSNViT(VisionTransformer):
    """mmpretrain's ``VisionTransformer`` whose ``forward`` takes MSN's
    ``mask_ratio`` (the masking of MSN's anchor views, as ``MAEViT`` adds
    MAE's masking to the same backbone).

    The class token and ``floor(N * (1 - mask_ratio))`` random patch tokens
    are kept after the position embedding (a parameter-free
    :class:`~pmsn_mm.models.utils.PatchDrop`): the state dict is a
    ``VisionTransformer``'s, ``mask_ratio=0`` its ``forward`` bit for bit.

    Args:
        **kwargs: Arguments of mmpretrain's ``VisionTransformer`` (``arch``,
            ``img_size``, ``patch_size``, ``out_type``, ...).
    """

    #: The parent's dropout, then a Sequential ending with ``patch_drop``.
    drop_after_pos: nn.Module

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        # mmpretrain takes the per-block drop-path rates from np.linspace:
        # numpy scalars, on which torch.compile breaks the graph in every
        # block (``if drop_prob == 0.``). Same values as Python floats.
        for module in self.modules():
            if isinstance(getattr(module, 'drop_prob', None), np.floating):
                module.drop_prob = float(module.drop_prob)
        self.drop_after_pos = nn.Sequential(
            OrderedDict(
                dropout=self.drop_after_pos,
                patch_drop=PatchDrop(self.num_extra_tokens)))

    def forward(
            self,
            x: Tensor,
            mask_ratio: float = 0.0,
            generator: Optional[torch.Generator] = None
    ) -> Tuple[Tensor, ...]:
        """Encode images, dropping ``mask_ratio`` of the patch tokens.

        Args:
            x: Tensor of shape (B, C, H, W).
            mask_ratio: Fraction of patch tokens dropped, in [0, 1).
            generator: Optional ``torch.Generator`` (``x.device``) of the draw.

        Returns:
            Tuple of features, one per ``out_indices``, shaped as
            ``out_type`` prescribes ((B, C) for ``'cls_token'`` and
            ``'avg_featmap'``, (B, 1 + num_keep, C) for ``'raw'``).
        """
        mask_ratio = check_mask_ratio(mask_ratio)
        if mask_ratio == 0:
            return super().forward(x)
        if self.out_type == 'featmap':
            raise ValueError(
                f'mask_ratio={mask_ratio} (patch-drop) cannot be used with '
                "out_type='featmap'; use 'cls_token', 'avg_featmap' or 'raw'.")
        patch_drop = cast(PatchDrop, self.drop_after_pos.patch_drop)
        patch_drop.mask_ratio, patch_drop.generator = mask_ratio, generator
        try:
            return super().forward(x)
        finally:
            patch_drop.mask_ratio, patch_drop.generator = 0.0, None
