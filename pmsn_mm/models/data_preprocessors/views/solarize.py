"""Solarize of a view group on the device: with probability ``solarize_prob``
the pixels of a view at or above ``solarize_threshold`` are inverted (mmcv's
``solarize``; its settings: ``pmsn_mm/views/solarize.py``)."""
from typing import Any, Dict

import torch
from torch import Tensor

from ....views.solarize import SolarizeSettings
from .base import ViewAugment, ViewDraws


def solarize(images: Tensor, mask: Tensor,
             threshold: float = 128.0) -> Tensor:
    """Invert the pixels at or above ``threshold`` of the masked images
    (mmcv's ``solarize``: ``x < thr ? x : 255 - x``).

    Args:
        images: Float tensor of shape (B, C, H, W) in [0, 255].
        mask: Bool tensor of shape (B,) (or (B, 1, 1, 1)).
        threshold: Threshold on the [0, 255] scale.

    Returns:
        Tensor of shape (B, C, H, W).
    """
    flipped = torch.where(images < threshold, images, 255.0 - images)
    return torch.where(mask.view(-1, 1, 1, 1), flipped, images)


class Solarize(SolarizeSettings, ViewAugment):
    """Solarize with probability ``solarize_prob`` at ``solarize_threshold``
    (on the [0, 255] scale). Random numbers: column 12 of the shared draw."""

    columns = (12, )
    coin_prob = 'solarize_prob'

    def apply(self, images: Tensor, group: Dict[str, Any],
              draws: ViewDraws) -> Tensor:
        return solarize(images, draws.coin(self.columns[0],
                                           group['solarize_prob'],
                                           'solarize coin'),
                        group['solarize_threshold'])
