"""Random grayscale of a view group on the device: with probability
``grayscale_prob`` a view becomes its luma on every channel
(``RandomGrayscale(keep_channels=True)``, ITU-R 601 weights; its settings:
``pmsn_mm/views/grayscale.py``)."""
from typing import Any, Dict

import torch
from torch import Tensor

from ....views.grayscale import GrayscaleSettings
from .base import ViewAugment, ViewDraws, device_constant
from .color_jitter import LUMA


def random_grayscale(images: Tensor, mask: Tensor) -> Tensor:
    """Replace the masked RGB images by their luma, kept on 3 channels
    (``RandomGrayscale(keep_channels=True)``; ITU-R 601 weights). Every
    image is converted and the mask selects, so nothing waits on it.

    Args:
        images: Float tensor of shape (B, 3, H, W).
        mask: Bool tensor of shape (B,).

    Returns:
        Tensor of shape (B, 3, H, W).
    """
    weights = device_constant('luma', images.device,
                              lambda: torch.tensor(LUMA).view(1, 3, 1, 1),
                              images.dtype)
    grey = (images * weights).sum(dim=1, keepdim=True)
    return torch.where(mask.to(images.device).view(-1, 1, 1, 1), grey,
                       images)


class Grayscale(GrayscaleSettings, ViewAugment):
    """Grayscale with probability ``grayscale_prob`` (RGB views). Random
    numbers: column 10 of the shared draw."""

    columns = (10, )
    coin_prob = 'grayscale_prob'

    def apply(self, images: Tensor, group: Dict[str, Any],
              draws: ViewDraws) -> Tensor:
        return random_grayscale(images, draws.coin(
            self.columns[0], group['grayscale_prob'], 'grayscale coin'))
