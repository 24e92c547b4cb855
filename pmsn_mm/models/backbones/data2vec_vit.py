"""BEiT-style ViT that returns every block's output (data2vec vision)."""
from typing import List, Optional, Tuple

import torch
from mmpretrain.models.selfsup.beit import BEiTPretrainViT
from mmpretrain.models.utils import resize_pos_embed
from mmpretrain.registry import MODELS
from torch import Tensor


@MODELS.register_module()
class Data2VecViT(BEiTPretrainViT):
    """ViT of data2vec vision: student (masked) and teacher (unmasked).

    mmpretrain's ``BEiTPretrainViT`` plus :meth:`forward_layers` (final
    tokens and every block's raw output, official ``layer_results='end'``);
    ``frozen_stages`` equal to the depth also freezes the relative position
    bias and the mask token.

    Args:
        **kwargs: Arguments of mmpretrain's ``BEiTPretrainViT``.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        # BEiTViT froze its stages before BEiTPretrainViT made the mask token
        if self.frozen_stages == len(self.layers):
            self._freeze_stages()

    def _freeze_stages(self) -> None:
        """``BEiTViT``'s freezing; with every block frozen, also the shared
        relative position bias and the mask token."""
        super()._freeze_stages()
        if self.frozen_stages != len(self.layers):
            return
        extra = list(self.rel_pos_bias.parameters()) \
            if self.rel_pos_bias is not None else []
        if getattr(self, 'mask_token', None) is not None:
            extra.append(self.mask_token)
        for param in extra:
            param.requires_grad = False

    def forward(self,
                x: Tensor,
                mask: Optional[Tensor] = None) -> Tuple[Tensor, ...]:
        """``BEiTPretrainViT.forward`` with the mask optional.

        Args:
            x: Tensor of shape (B, C, H, W).
            mask: Optional mask of shape (B, h, w); None gives the usual
                ``out_type`` features (e.g. for ``extract_feat``).

        Returns:
            Tuple of features, one per ``out_indices``.
        """
        return super().forward(x, mask)

    def forward_layers(
            self,
            x: Tensor,
            mask: Optional[Tensor] = None) -> Tuple[Tensor, List[Tensor]]:
        """Encode images, replacing masked patch embeddings by the mask token.

        Args:
            x: Tensor of shape (B, C, H, W).
            mask: Optional 0/1 tensor (B, h, w) or (B, h * w); 1: masked.

        Returns:
            The last block's output after the final norm (if
            ``final_norm``), (B, 1 + N, C) class token first, and the list of
            the L raw block outputs, each (B, 1 + N, C).
        """
        x, patch_resolution = self.patch_embed(x)
        batch, num_patches, _ = x.shape
        if mask is not None:
            if mask[0].numel() != num_patches:
                raise ValueError(
                    f'mask has {mask[0].numel()} entries per image but the '
                    f'image has {num_patches} patches ({patch_resolution}); '
                    'the mask generator input_size must be the patch grid.')
            weight = mask.reshape(batch, num_patches, 1).type_as(x)
            tokens = self.mask_token.expand(batch, num_patches, -1)
            x = x * (1.0 - weight) + tokens * weight
        x = torch.cat((self.cls_token.expand(batch, -1, -1), x), dim=1)
        if self.pos_embed is not None:
            x = x + resize_pos_embed(
                self.pos_embed,
                self.patch_resolution,
                patch_resolution,
                mode=self.interpolate_mode,
                num_extra_tokens=self.num_extra_tokens)
        x = self.drop_after_pos(x)
        rel_pos_bias = self.rel_pos_bias() \
            if self.rel_pos_bias is not None else None

        blocks = []
        for layer in self.layers:
            x = layer(x, rel_pos_bias)
            blocks.append(x)
        if self.final_norm:
            x = self.ln1(x)
        return x, blocks
