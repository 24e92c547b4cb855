"""Frozen features of one packed batch (shared by kNN hook and tools)."""
from typing import Union

import torch.nn.functional as F
from torch import Tensor, nn


def last_output(x: Union[Tensor, tuple, list]) -> Tensor:
    """The last element of a backbone/neck output tuple (or the tensor)."""
    return x[-1] if isinstance(x, (list, tuple)) else x


def pooled(x: Tensor) -> Tensor:
    """(B, C, H, W) maps average-pooled to (B, C); other shapes unchanged."""
    return F.adaptive_avg_pool2d(x, 1).flatten(1) if x.dim() == 4 else x


def batch_features(model: nn.Module, data: dict,
                   stage: str = 'backbone') -> Tensor:
    """Features of a ``default_collate`` batch, shape (B, D).

    Runs ``model.data_preprocessor``, takes the first view when the
    pre-processor returns a list (``SelfSupDataPreprocessor``), then the last
    output of ``model.extract_feat`` (``'backbone'``) or of ``model.neck`` on
    it (``'neck'``), average-pooling 4-D maps. Call under ``no_grad``.

    Args:
        model: An mmpretrain model (e.g. PMSN) in the desired mode.
        data: A collated batch with ``inputs`` and ``data_samples``.
        stage: ``'backbone'`` or ``'neck'``.

    Returns:
        Tensor of shape (B, D).
    """
    inputs = model.data_preprocessor(data, False)['inputs']
    inputs = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    out = last_output(model.extract_feat(inputs))
    if stage == 'neck':
        out = last_output(model.neck(out))
    return pooled(out)
