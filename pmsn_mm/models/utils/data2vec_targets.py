"""data2vec regression targets: the normalised average of top teacher blocks.

As official data2vec vision's ``train_one_epoch``
(``beit/engine_for_cyclical.py``): each chosen block output (patch tokens)
is normalised, averaged, and the average normalised again (parameter-free
layer norm both times in the released ViT-B command).
"""
from typing import Optional, Sequence, cast

import torch.nn.functional as F
from torch import Tensor

#: Target normalisations: ``'layer'`` normalises each token over its C
#: features (``F.layer_norm`` without affine); ``'instance'`` normalises each
#: feature over the N tokens of its image (``F.instance_norm`` on (B, C, N),
#: the official ``target_instance_norm``); None leaves the tensor as is.
TARGET_NORMS = ('layer', 'instance', None)


def normalize_tokens(x: Tensor, norm: Optional[str]) -> Tensor:
    """Parameter-free normalisation of token features.

    Args:
        x: Tensor of shape (B, N, C).
        norm: One of :data:`TARGET_NORMS`.

    Returns:
        Float tensor of shape (B, N, C).
    """
    if norm not in TARGET_NORMS:
        raise ValueError(
            f'norm must be one of {TARGET_NORMS}, but is {norm!r}.')
    x = x.float()
    if norm == 'layer':
        return F.layer_norm(x, x.shape[-1:])
    if norm == 'instance':
        return F.instance_norm(x.transpose(1, 2)).transpose(1, 2)
    return x


def average_layer_targets(layer_outputs: Sequence[Tensor],
                          layer_norm: Optional[str] = 'layer',
                          post_norm: Optional[str] = 'layer') -> Tensor:
    """Average of the normalised block outputs, normalised again.

    ``post_norm(mean_l(layer_norm(y_l)))``.

    Args:
        layer_outputs: L >= 1 tensors of shape (B, N, C), the teacher's
            chosen block outputs (patch tokens, without the class token).
        layer_norm: Of each block output (:data:`TARGET_NORMS`); ``'layer'``.
        post_norm: Normalisation of the average. Defaults to ``'layer'``.

    Returns:
        Float tensor of shape (B, N, C).
    """
    if len(layer_outputs) == 0:
        raise ValueError('layer_outputs must hold at least one block output.')
    total = cast(Tensor, sum(normalize_tokens(y, layer_norm)
                             for y in layer_outputs))  # >= 1 tensor
    return normalize_tokens(total / len(layer_outputs), post_norm)


__all__ = ['TARGET_NORMS', 'average_layer_targets', 'normalize_tokens']
