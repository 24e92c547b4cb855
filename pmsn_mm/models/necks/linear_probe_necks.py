"""Necks that turn a frozen backbone's outputs into linear-probe features:
the representations of the paper's evaluation protocol (App. E.2), as VISSL
computes them. ViT: the last CLS token (no neck needed) and the last 4
concatenated (``concatCLS4``, :class:`ConcatCLSNeck`); ResNet-50 (SEER):
the 1×1 and 2×2 adaptive average pools (:class:`AdaptivePoolNeck`).
"""
from typing import List, Optional, Sequence, Tuple, Union, cast

import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import check_int, check_positive


def concat_cls_tokens(tokens: Sequence[Tensor],
                      weight: Optional[Tensor] = None,
                      bias: Optional[Tensor] = None,
                      eps: float = 1e-6) -> Tensor:
    """Concatenate CLS tokens, layer-normalised first if ``weight`` is set.

    Args:
        tokens: n Tensors of shape (B, D).
        weight: Shared LayerNorm scale (D,), or None for no normalisation.
        bias: LayerNorm shift of shape (D,) (only with ``weight``).
        eps: LayerNorm epsilon.

    Returns:
        Tensor of shape (B, n * D), the tokens in the given order.
    """
    if weight is not None:
        tokens = [
            F.layer_norm(t, t.shape[-1:], weight, bias, eps) for t in tokens
        ]
    return torch.cat(list(tokens), dim=1)


def adaptive_pool_flatten(x: Tensor, output_size: Tuple[int, int]) -> Tensor:
    """Adaptive average pooling followed by a channel-major flatten.

    Args:
        x: Feature map of shape (B, C, H, W).
        output_size: Pooled size (h, w).

    Returns:
        Tensor of shape (B, C * h * w); entry ``c * h * w + i * w + j`` is the
        mean of channel c over pooling cell (i, j), as ``torch.flatten``.
    """
    return torch.flatten(F.adaptive_avg_pool2d(x, output_size), 1)


def _last(
        inputs: Union[Tensor, Tuple[Tensor, ...], List[Tensor]]) -> Tensor:
    return inputs[-1] if isinstance(inputs, (tuple, list)) else inputs


@MODELS.register_module()
class ConcatCLSNeck(BaseModule):
    """Concatenate the CLS tokens of the last n ViT blocks (VISSL concatCLSn).

    Use it after an mmpretrain ``VisionTransformer`` with
    ``out_type='cls_token'`` and ``out_indices=[-n, ..., -1]``.

    VISSL (and DINO) apply the final LayerNorm to *every* one of the n
    tokens, mmpretrain's ViT only after the last block: set ``final_norm``
    here and not in the backbone, loading ``init_cfg=dict(type='Pretrained',
    checkpoint=CKPT, prefix='backbone.ln1.')``. Input: n or more (B, D)
    Tensors; output: a tuple with one (B, n * D), block L-n+1 first.

    Args:
        num_layers: n, the number of last blocks (VISSL/DINO: 4), >= 1.
        in_channels: Token dim D; required with ``final_norm=True``.
        final_norm: Layer-normalise every token (frozen ``weight`` / ``bias``).
        norm_eps: LayerNorm epsilon (mmpretrain/timm/VISSL ViTs: 1e-6).
        init_cfg: mmengine init config, e.g. the ``Pretrained`` one above.
    """

    # the frozen LayerNorm, None without ``final_norm``
    weight: Optional[nn.Parameter]
    bias: Optional[nn.Parameter]

    def __init__(self,
                 num_layers: int = 4,
                 in_channels: Optional[int] = None,
                 final_norm: bool = False,
                 norm_eps: float = 1e-6,
                 init_cfg: Optional[Union[dict, list]] = None) -> None:
        super().__init__(init_cfg=init_cfg)
        self.num_layers = check_int('ConcatCLSNeck num_layers', num_layers, 1)
        if final_norm:
            in_channels = check_int(
                'ConcatCLSNeck in_channels (the token dim, needed with '
                'final_norm=True)', in_channels, 1)
        self.in_channels = in_channels
        self.final_norm = bool(final_norm)
        self.norm_eps = check_positive('ConcatCLSNeck norm_eps', norm_eps)
        if self.final_norm:
            channels = cast(int, in_channels)  # checked above
            self.weight = nn.Parameter(
                torch.ones(channels), requires_grad=False)
            self.bias = nn.Parameter(
                torch.zeros(channels), requires_grad=False)
        else:
            self.weight = self.bias = None

    def forward(self, inputs: Sequence[Tensor]) -> Tuple[Tensor]:
        """Concatenate the last ``num_layers`` CLS tokens.

        Args:
            inputs: Tuple of Tensors of shape (B, D).

        Returns:
            Tuple with one Tensor of shape (B, num_layers * D).
        """
        if not isinstance(inputs, (tuple, list)) or \
                len(inputs) < self.num_layers:
            got = len(inputs) if isinstance(inputs, (tuple, list)) else 1
            raise ValueError(
                f'ConcatCLSNeck(num_layers={self.num_layers}) needs at least '
                f'{self.num_layers} backbone outputs but got {got}; set the '
                f'backbone out_indices to the last {self.num_layers} blocks, '
                f'e.g. {list(range(-self.num_layers, 0))}.')
        tokens = list(inputs[-self.num_layers:])
        for t in tokens:
            if t.dim() != 2:
                raise ValueError(
                    'ConcatCLSNeck expects CLS tokens of shape (B, D) but got '
                    f"shape {tuple(t.shape)}; use out_type='cls_token' in the "
                    'backbone.')
        return (concat_cls_tokens(tokens, self.weight, self.bias,
                                  self.norm_eps), )


@MODELS.register_module()
class AdaptivePoolNeck(BaseModule):
    """Adaptive average pooling of the last feature map, flattened (SEER).

    ``output_size=1``: ResNet-50's 2048-d global pool (VISSL ``res5``);
    ``2``: SEER's 8192-d one, flattened channel-major. Input: a Tensor (B,
    C, H, W) or a tuple of them (last used); output: a tuple with one
    Tensor (B, C * h * w).

    Args:
        output_size: Pooled size: an int s for (s, s), or a pair (h, w), >= 1.
        init_cfg: mmengine init config (the neck has no parameters).
    """

    def __init__(self,
                 output_size: Union[int, Sequence[int]] = 1,
                 init_cfg: Optional[Union[dict, list]] = None) -> None:
        super().__init__(init_cfg=init_cfg)
        size = output_size
        if isinstance(size, int) and not isinstance(size, bool):
            size = (size, size)
        if not isinstance(size, (tuple, list)) or len(size) != 2:
            raise ValueError('AdaptivePoolNeck output_size must be an int >= 1'
                             f' or a pair of them, but is {output_size!r}.')
        self.output_size = cast(Tuple[int, int], tuple(  # a pair: checked
            check_int('AdaptivePoolNeck output_size', s, 1) for s in size))

    def forward(
        self, inputs: Union[Tensor, Tuple[Tensor, ...], List[Tensor]]
    ) -> Tuple[Tensor]:
        """Pool and flatten the last feature map.

        Args:
            inputs: Tensor of shape (B, C, H, W), or a tuple of them.

        Returns:
            Tuple with one Tensor of shape (B, C * h * w).
        """
        x = _last(inputs)
        if x.dim() != 4:
            raise ValueError(
                'AdaptivePoolNeck expects a feature map of shape (B, C, H, W) '
                f'but got shape {tuple(x.shape)}.')
        return (adaptive_pool_flatten(x, self.output_size), )
