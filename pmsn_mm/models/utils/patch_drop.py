"""MSN patch-drop: keep the extra (class) tokens and a random subset of the
patch tokens, after the position embedding.

Kept instead of ``timm.layers.PatchDropout``: it draws from the global RNG
(no ``generator``), is a no-op in eval mode and keeps 1 patch where we raise.
"""
import math
from typing import Callable, Optional

import torch
from torch import Tensor, nn

from ...utils.validation import check_number


def check_mask_ratio(mask_ratio: float) -> float:
    """Return ``mask_ratio`` as a float; raise unless it is in [0, 1).

    Args:
        mask_ratio: Fraction of patch tokens to drop.
    """
    return check_number('mask_ratio', mask_ratio, 0, 1, high_open=True)


def num_kept_tokens(num_patches: int, mask_ratio: float) -> int:
    """Number of patch tokens kept: ``floor(num_patches * (1 - mask_ratio))``.

    Args:
        num_patches: Number of patch tokens N (without the class token).
        mask_ratio: Fraction of patch tokens to drop, in [0, 1).

    Returns:
        int.
    """
    return int(math.floor(num_patches * (1.0 - mask_ratio)))


def _draw_keep_indices(batch_size: int,
                       num_tokens: int,
                       num_keep: int,
                       device: torch.device,
                       generator: Optional[torch.Generator] = None) -> Tensor:
    """The eager draw of :func:`random_keep_indices`."""
    noise = torch.rand(
        batch_size, num_tokens, device=device, generator=generator)
    keep = noise.argsort(dim=1)[:, :num_keep]
    return keep.sort(dim=1).values


def _untraced_draw() -> Callable[..., Tensor]:
    """:func:`_draw_keep_indices` (global generator) as an operator that
    ``torch.compile`` does not trace.

    A custom operator tagged as seeded random (never merged or
    recomputed); before torch 2.8 (no tags) ``torch.compiler.disable``, a
    graph break at the call.
    """

    def draw(batch_size: int, num_tokens: int, num_keep: int,
             device: torch.device) -> Tensor:
        return _draw_keep_indices(batch_size, num_tokens, num_keep, device)

    try:
        op = torch.library.custom_op(
            'pmsn_mm::random_keep_indices',
            mutates_args=(),
            tags=(torch.Tag.nondeterministic_seeded, ))(draw)
    except (AttributeError, TypeError):  # torch < 2.8
        return torch.compiler.disable(draw)

    @op.register_fake
    def _(batch_size, num_tokens, num_keep, device):
        return torch.empty(
            batch_size, num_keep, dtype=torch.long, device=device)

    return op


_draw_untraced = _untraced_draw()
# a generator is no operator argument: that draw is a graph break instead
_draw_untraced_with_generator = torch.compiler.disable(_draw_keep_indices)


def random_keep_indices(batch_size: int,
                        num_tokens: int,
                        num_keep: int,
                        device: torch.device,
                        generator: Optional[torch.Generator] = None) -> Tensor:
    """Draw ``num_keep`` distinct token indices per sample, independently.

    The first ``num_keep`` of the argsort of uniform noise, sorted; an
    opaque operator under ``torch.compile``, so compiled and eager steps
    draw the same numbers from torch's (resumable) generator.

    Args:
        batch_size: B.
        num_tokens: N, the number of tokens to choose from.
        num_keep: How many to keep, 0 <= num_keep <= N.
        device: Device of the returned indices (and of the noise).
        generator: Optional ``torch.Generator`` on ``device``.

    Returns:
        LongTensor of shape (B, num_keep), ascending along dim 1.
    """
    if generator is not None:
        return _draw_untraced_with_generator(batch_size, num_tokens,
                                             num_keep, device, generator)
    return _draw_untraced(batch_size, num_tokens, num_keep, device)


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
        Tensor (B, num_extra_tokens + num_keep, C), extra tokens first.
    """
    batch_size, _, channels = tokens.shape
    extra = tokens[:, :num_extra_tokens]
    patches = tokens[:, num_extra_tokens:]
    keep = random_keep_indices(batch_size, patches.shape[1], num_keep,
                               tokens.device, generator)
    kept = torch.gather(patches, 1,
                        keep.unsqueeze(-1).expand(-1, -1, channels))
    return torch.cat([extra, kept], dim=1)


class PatchDrop(nn.Module):
    """Token-dropping layer of :class:`~pmsn_mm.models.backbones.MSNViT`.

    Identity while ``mask_ratio == 0``; otherwise :func:`drop_patch_tokens`
    keeping ``floor(N * (1 - mask_ratio))`` patches. The backbone sets
    ``mask_ratio`` (and ``generator``) for one forward. No parameters.

    Args:
        num_extra_tokens: Leading tokens always kept (class token), >= 0.
    """

    def __init__(self, num_extra_tokens: int = 1) -> None:
        super().__init__()
        self.num_extra_tokens = num_extra_tokens
        self.mask_ratio = 0.0
        self.generator: Optional[torch.Generator] = None

    def forward(self, tokens: Tensor) -> Tensor:
        """Drop patch tokens.

        Args:
            tokens: Tensor of shape (B, num_extra_tokens + N, C).

        Returns:
            Tensor of shape (B, num_extra_tokens + num_keep, C).
        """
        if self.mask_ratio == 0:
            return tokens
        num_patches = tokens.shape[1] - self.num_extra_tokens
        num_keep = num_kept_tokens(num_patches, self.mask_ratio)
        if num_keep < 1:
            raise ValueError(
                f'mask_ratio={self.mask_ratio} keeps no patch token out of '
                f'{num_patches}; use a smaller mask_ratio.')
        return drop_patch_tokens(tokens, num_keep, self.num_extra_tokens,
                                 self.generator)

    def extra_repr(self) -> str:
        return f'num_extra_tokens={self.num_extra_tokens}'
