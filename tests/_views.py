"""Helpers of the view tests: the package's view functions in the
conventions the tests compare against (per-sample transforms' ``(top, left,
h, w)`` boxes, one box per image, parameters drawn here)."""
from typing import Any, Dict, Optional, Sequence, Union

import torch
from torch import Tensor

from pmsn_mm.models.data_preprocessors.views import (color_params,
                                                     crop_corners, crop_resize)

SizeLike = Union[int, Tensor]


def crop_boxes(batch_size: int,
               height: SizeLike,
               width: SizeLike,
               scale: Sequence[float] = (0.08, 1.0),
               ratio: Sequence[float] = (3. / 4., 4. / 3.),
               max_attempts: int = 10,
               generator: Optional[torch.Generator] = None) -> Tensor:
    """One random-resized-crop box per image (:func:`crop_corners`), as a
    long tensor of shape (B, 4): ``(top, left, h, w)``; ``height`` and
    ``width`` an int or a tensor of shape (B,)."""
    sides = []
    for size in (width, height):
        if isinstance(size, Tensor):
            if size.shape != (batch_size, ):
                raise ValueError(f'per-image sizes must have shape '
                                 f'({batch_size},), got {tuple(size.shape)}.')
            sides.append(size.to(torch.float32))
        else:
            sides.append(torch.full((batch_size, ), float(size)))
    corner, extent = crop_corners(torch.stack(sides, 1), 1, scale, ratio,
                                  max_attempts, generator)
    return torch.cat([corner.flip(1), extent.flip(1)], 1).long()


def crop_boxes_out(images: Tensor,
                   boxes: Tensor,
                   size: Sequence[int],
                   flip: Optional[Tensor] = None,
                   batch_index: Optional[Tensor] = None) -> Tensor:
    """:func:`crop_resize` of ``(top, left, h, w)`` boxes (box ``i`` of
    image ``i`` unless ``batch_index`` says otherwise)."""
    if batch_index is None:
        batch_index = torch.arange(boxes.shape[0], device=images.device)
    return crop_resize(images, boxes[:, [1, 0]], boxes[:, [3, 2]], size,
                       flip, batch_index)


def draw_color_params(num: int,
                      brightness: float = 0.0,
                      contrast: float = 0.0,
                      saturation: float = 0.0,
                      hue: float = 0.0,
                      prob: float = 1.0,
                      generator: Optional[torch.Generator] = None
                      ) -> Dict[str, Any]:
    """:func:`color_params` of ``num`` images, drawn here."""
    return color_params(torch.rand(num, 9, generator=generator), brightness,
                        contrast, saturation, hue, prob)
