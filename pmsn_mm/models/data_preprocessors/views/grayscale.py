"""Random grayscale of a view group: with probability ``grayscale_prob`` a
view becomes its luma on every channel (``RandomGrayscale(keep_channels=
True)``, ITU-R 601 weights)."""
from typing import Any, Dict

import torch
from torch import Tensor

from ....utils.validation import check_probability
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


class Grayscale(ViewAugment):
    """Grayscale with probability ``grayscale_prob`` (RGB views). Random
    numbers: column 10 of the shared draw."""

    defaults = dict(grayscale_prob=0.0)
    columns = (10, )
    coin_prob = 'grayscale_prob'

    def check(self, group: Dict[str, Any], where: str) -> Dict[str, Any]:
        return dict(grayscale_prob=check_probability(
            f'{where} grayscale_prob', group['grayscale_prob']))

    def enabled(self, group: Dict[str, Any]) -> bool:
        return group['grayscale_prob'] > 0

    def apply(self, images: Tensor, group: Dict[str, Any],
              draws: ViewDraws) -> Tensor:
        return random_grayscale(images, draws.coin(
            self.columns[0], group['grayscale_prob'], 'grayscale coin'))
