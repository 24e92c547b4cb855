"""MSN patch-drop for mmpretrain's ``VisionTransformer``.

MSN masks the anchor views by dropping a random subset of patch tokens after
the position embedding has been added, keeping the class token; the
transformer then only attends over the kept tokens. mmpretrain's
``VisionTransformer.forward`` has no such hook, so
:func:`vit_forward_with_patch_drop` re-states that forward with the drop
inserted.
"""
import math
from typing import Optional, Tuple

import torch
from mmpretrain.models.backbones import VisionTransformer
from mmpretrain.models.utils import resize_pos_embed
from torch import Tensor, nn

SUPPORTED_BACKBONES = (
    "mmpretrain VisionTransformer and subclasses that keep its forward "
    "(e.g. MoCoV3ViT)")


def supports_patch_drop(backbone: nn.Module) -> bool:
    """Whether :func:`vit_forward_with_patch_drop` can run ``backbone``.

    True for mmpretrain's ``VisionTransformer`` and subclasses that do not
    override ``forward`` and have at most one extra (class) token, i.e. that
    keep its token layout. False for e.g. ResNet, timm models, DeiT (two extra
    tokens), DeiT3 and MAEViT (own forward).

    Args:
        backbone: The backbone module (not a DDP wrapper).

    Returns:
        bool.
    """
    return (isinstance(backbone, VisionTransformer)
            and type(backbone).forward is VisionTransformer.forward
            and backbone.num_extra_tokens <= 1)


def num_kept_tokens(num_patches: int, mask_ratio: float) -> int:
    """Number of patch tokens kept: ``floor(num_patches * (1 - mask_ratio))``.

    Args:
        num_patches: Number of patch tokens N (without the class token).
        mask_ratio: Fraction of patch tokens to drop, in [0, 1).

    Returns:
        int.
    """
    return int(math.floor(num_patches * (1.0 - mask_ratio)))


def random_keep_indices(batch_size: int,
                        num_tokens: int,
                        num_keep: int,
                        device: torch.device,
                        generator: Optional[torch.Generator] = None) -> Tensor:
    """Draw ``num_keep`` distinct token indices per sample, independently.

    Indices are the first ``num_keep`` of the argsort of uniform noise, then
    sorted so kept tokens keep their original order.

    Args:
        batch_size: B.
        num_tokens: N, the number of tokens to choose from.
        num_keep: How many to keep, 0 <= num_keep <= N.
        device: Device of the returned indices (and of the noise).
        generator: Optional ``torch.Generator`` on ``device``.

    Returns:
        LongTensor of shape (B, num_keep), ascending along dim 1.
    """
    noise = torch.rand(
        batch_size, num_tokens, device=device, generator=generator)
    keep = noise.argsort(dim=1)[:, :num_keep]
    return keep.sort(dim=1).values


def drop_patch_tokens(tokens: Tensor,
                      num_keep: int,
                      num_extra_tokens: int = 1,
                      generator: Optional[torch.Generator] = None) -> Tensor:
    """Keep the extra (class) tokens and ``num_keep`` random patch tokens.

    Args:
        tokens: Tensor of shape (B, num_extra_tokens + N, C).
        num_keep: Patch tokens to keep per sample, 0 <= num_keep <= N.
        num_extra_tokens: Leading tokens that are always kept. Defaults to 1.
        generator: Optional ``torch.Generator`` on ``tokens.device``.

    Returns:
        Tensor of shape (B, num_extra_tokens + num_keep, C); the extra tokens
        stay first.
    """
    batch_size, _, channels = tokens.shape
    extra = tokens[:, :num_extra_tokens]
    patches = tokens[:, num_extra_tokens:]
    keep = random_keep_indices(batch_size, patches.shape[1], num_keep,
                               tokens.device, generator)
    kept = torch.gather(patches, 1,
                        keep.unsqueeze(-1).expand(-1, -1, channels))
    return torch.cat([extra, kept], dim=1)


def _check_mask_ratio(mask_ratio: float) -> None:
    if not (isinstance(mask_ratio, (int, float)) and 0 <= mask_ratio < 1):
        raise ValueError(f'mask_ratio must be in [0, 1) but is {mask_ratio}.')


def vit_forward_with_patch_drop(
        vit: VisionTransformer,
        x: Tensor,
        mask_ratio: float,
        generator: Optional[torch.Generator] = None) -> Tuple[Tensor, ...]:
    """``VisionTransformer.forward`` with MSN patch-drop after ``pos_embed``.

    Follows mmpretrain 1.2.0's ``VisionTransformer.forward`` step by step:
    patch_embed -> prepend cls token -> add resized pos_embed ->
    drop_after_pos -> **keep the cls token and** ``floor(N * (1 -
    mask_ratio))`` **random patch tokens per sample** -> pre_norm -> layers
    (final norm after the last) -> ``_format_output`` for every index in
    ``out_indices``. With ``mask_ratio == 0`` nothing is dropped and no random
    numbers are drawn, so the output equals ``vit(x)`` exactly.

    Args:
        vit: A backbone for which :func:`supports_patch_drop` is True.
        x: Images, Tensor of shape (B, 3, H, W).
        mask_ratio: Fraction of patch tokens to drop, in [0, 1).
        generator: Optional ``torch.Generator`` on ``x.device``.

    Returns:
        Tuple of features, one per ``vit.out_indices``, shaped as
        ``vit.out_type`` prescribes ((B, C) for 'cls_token' and
        'avg_featmap', (B, 1 + num_keep, C) for 'raw').

    Raises:
        ValueError: If ``mask_ratio`` is outside [0, 1), keeps no patch, is
            > 0 for an unsupported backbone, or is > 0 with
            ``out_type='featmap'`` (dropped tokens cannot form a map).
    """
    _check_mask_ratio(mask_ratio)
    if not supports_patch_drop(vit):
        raise ValueError(
            f'mask_ratio={mask_ratio} (patch-drop) needs one of '
            f'{SUPPORTED_BACKBONES}, but got {type(vit).__name__}.')
    if mask_ratio > 0 and vit.out_type == 'featmap':
        raise ValueError(
            f'mask_ratio={mask_ratio} (patch-drop) cannot be used with '
            "out_type='featmap'; use 'cls_token', 'avg_featmap' or 'raw'.")

    batch_size = x.shape[0]
    x, patch_resolution = vit.patch_embed(x)
    if vit.cls_token is not None:
        cls_token = vit.cls_token.expand(batch_size, -1, -1)
        x = torch.cat((cls_token, x), dim=1)
    x = x + resize_pos_embed(
        vit.pos_embed,
        vit.patch_resolution,
        patch_resolution,
        mode=vit.interpolate_mode,
        num_extra_tokens=vit.num_extra_tokens)
    x = vit.drop_after_pos(x)

    if mask_ratio > 0:
        num_patches = x.shape[1] - vit.num_extra_tokens
        num_keep = num_kept_tokens(num_patches, mask_ratio)
        if num_keep < 1:
            raise ValueError(
                f'mask_ratio={mask_ratio} keeps no patch token out of '
                f'{num_patches}; use a smaller mask_ratio.')
        x = drop_patch_tokens(x, num_keep, vit.num_extra_tokens, generator)

    x = vit.pre_norm(x)
    outs = []
    for i, layer in enumerate(vit.layers):
        x = layer(x)
        if i == len(vit.layers) - 1 and vit.final_norm:
            x = vit.ln1(x)
        if i in vit.out_indices:
            outs.append(vit._format_output(x, patch_resolution))
    return tuple(outs)


def forward_with_patch_drop(
        backbone: nn.Module,
        x: Tensor,
        mask_ratio: float,
        generator: Optional[torch.Generator] = None) -> Tuple[Tensor, ...]:
    """Run any backbone; apply patch-drop only when ``mask_ratio > 0``.

    Args:
        backbone: Any mmpretrain backbone; must satisfy
            :func:`supports_patch_drop` when ``mask_ratio > 0``.
        x: Images, Tensor of shape (B, 3, H, W).
        mask_ratio: Fraction of patch tokens to drop, in [0, 1).
        generator: Optional ``torch.Generator`` on ``x.device``.

    Returns:
        The backbone's output tuple.

    Raises:
        ValueError: If ``mask_ratio > 0`` and the backbone is unsupported,
            or ``mask_ratio`` is outside [0, 1).
    """
    _check_mask_ratio(mask_ratio)
    if mask_ratio == 0:
        return backbone(x)
    return vit_forward_with_patch_drop(backbone, x, mask_ratio, generator)
