"""Random resized crop + horizontal flip of a view group on the device: the
first view augmentation, which turns a (padded, mixed-size) batch into its
views, as torchvision's ``RandomResizedCrop`` + ``RandomFlip`` (settings:
``pmsn_mm/views/crop.py``).
"""
import math
from typing import Any, Dict, Optional, Sequence, Tuple

import torch
from torch import Tensor

from ....utils.validation import check_int, check_range_pair
from ....views.crop import CropSettings
from .base import ViewAugment, ViewDraws, device_constant


def crop_corners(sizes: Tensor,
                 views: int = 1,
                 scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3. / 4., 4. / 3.),
                 max_attempts: int = 10,
                 generator: Optional[torch.Generator] = None
                 ) -> Tuple[Tensor, Tensor]:
    """Random-resized-crop boxes of ``views`` views of every image, in each
    image's own coordinates, as torchvision's ``RandomResizedCrop`` (the
    first of ``max_attempts`` tries that fits, else the central box).

    Args:
        sizes: Tensor of shape (N, 2): each image's ``(width, height)``.
        views: Boxes per image; box ``v * N + i``: view ``v`` of image ``i``.
        scale: Range of the crop area as a fraction of the image, in (0, 1].
        ratio: Range of the crop aspect ratio w / h, > 0.
        max_attempts: Tries per box before the central fallback, >= 1.
        generator: Optional torch generator.

    Returns:
        ``corner`` and ``extent``: float tensors of shape (views * N, 2),
        each box's ``(left, top)`` and ``(width, height)`` in whole pixels.
    """
    smin, smax = check_range_pair('scale', scale, 0.0, 1.0, low_open=True)
    rmin, rmax = check_range_pair('ratio', ratio, 0.0, low_open=True)
    tries = check_int('max_attempts', max_attempts, 1)
    views = check_int('views', views, 1)
    if sizes.dim() != 2 or sizes.shape[1] != 2:
        raise ValueError('sizes must have shape (N, 2), got '
                         f'{tuple(sizes.shape)}.')
    device = sizes.device
    dims = sizes.to(torch.float32)
    if views > 1:
        dims = dims.repeat(views, 1)
    num = dims.shape[0]
    dims = dims.view(num, 1, 2)
    lmin, lmax = math.log(rmin), math.log(rmax)
    # (try, [area fraction, log ratio]); the last row: the offsets' uniforms
    low = device_constant(('crop low', smin, lmin, tries), device,
                          lambda: [[smin, lmin]] * tries + [[0.0, 0.0]])
    span = device_constant(
        ('crop span', smin, smax, lmin, lmax, tries), device,
        lambda: [[smax - smin, lmax - lmin]] * tries + [[1.0, 1.0]])
    z = torch.addcmul(low, torch.rand(num, tries + 1, 2, generator=generator,
                                      device=device), span)
    attempts = z[:, :tries]
    # w = sqrt(area * f * r), h = sqrt(area * f / r)
    sign = device_constant('crop sign', device, lambda: [1.0, -1.0])
    stretch = torch.exp(attempts[..., 1:] * sign)
    area = dims.prod(dim=-1, keepdim=True)
    extent = torch.round(torch.sqrt(stretch * (attempts[..., :1] * area)))
    one = device_constant('crop one', device, lambda: 1.0)
    fits = (extent.clamp(one, dims) == extent).all(dim=-1, keepdim=True)
    ok, first = fits.max(dim=1, keepdim=True)  # any fit; the first one
    extent = extent.gather(1, first.expand(num, 1, 2))
    # central fallback, as mmpretrain: the largest box of an extreme ratio
    limit = device_constant(('crop limit', rmin, rmax), device,
                            lambda: [rmax, 1.0 / rmin])
    cand = dims.flip(-1) * limit  # (h * rmax, w / rmin)
    fallback = torch.where(cand < dims, cand.round(), dims)
    extent = torch.where(ok, extent, fallback)
    free = dims - extent
    corner = torch.floor(
        torch.where(ok, z[:, tries:] * (free + 1), free * 0.5))
    return corner.view(num, 2), extent.view(num, 2)


def replicate_edges(images: Tensor, heights: Tensor,
                    widths: Tensor) -> Tensor:
    """Fill the padding of a mixed-size batch with each image's last row
    and column (clamp-to-edge), so that bilinear samples near an image's
    border never mix in padding.

    Args:
        images: Tensor (B, C, H, W), image ``i`` in its top-left corner.
        heights: Long tensor of shape (B,).
        widths: Long tensor of shape (B,).

    Returns:
        Tensor of shape (B, C, H, W).
    """
    num, channels, height, width = images.shape
    rows = torch.arange(height, device=images.device).minimum(
        heights.to(images.device).view(num, 1) - 1)  # (B, H)
    cols = torch.arange(width, device=images.device).minimum(
        widths.to(images.device).view(num, 1) - 1)  # (B, W)
    out = images.gather(
        2, rows.view(num, 1, height, 1).expand(num, channels, height, width))
    return out.gather(
        3, cols.view(num, 1, 1, width).expand(num, channels, height, width))


def crop_resize(images: Tensor,
                corner: Tensor,
                extent: Tensor,
                size: Sequence[int],
                flip: Optional[Tensor] = None,
                image_index: Optional[Tensor] = None) -> Tensor:
    """Crop boxes out of a batch, resize them bilinearly, optionally mirror.

    One ``torchvision.ops.roi_align`` call (``aligned=True``: pixel centres at
    half-integers, as PIL, OpenCV and ``grid_sample(align_corners= False)``;
    adaptive sampling: ``ceil(crop / output)`` bilinear samples per output
    pixel and axis are averaged, so shrinking antialiases and enlarging is
    plain bilinear). Outside the batch tensor, samples clamp to its border.

    Args:
        images: Float tensor of shape (N, C, H, W).
        corner: Tensor of shape (B, 2): each box's ``(left, top)``.
        extent: Tensor of shape (B, 2): each box's ``(width, height)``.
        size: Output ``(h, w)``.
        flip: Optional bool tensor of B values: mirror horizontally.
        image_index: Optional tensor (B,): each box's image (default
            ``b mod N``: the view-major boxes of :func:`crop_corners`).

    Returns:
        Tensor of shape (B, C, size[0], size[1]).
    """
    from torchvision.ops import roi_align
    num, dtype = corner.shape[0], images.dtype
    if image_index is None:
        image_index = torch.arange(num, device=images.device, dtype=dtype)
        if num != images.shape[0]:
            image_index = image_index.remainder(images.shape[0])
    corner = corner.to(device=images.device, dtype=dtype)
    rois = torch.cat([
        image_index.to(images.device, dtype).view(num, 1), corner,
        corner + extent.to(device=images.device, dtype=dtype)
    ], dim=1)
    out = roi_align(images, rois, tuple(int(s) for s in size),
                    spatial_scale=1.0, sampling_ratio=-1, aligned=True)
    if flip is not None:
        out = torch.where(flip.to(images.device).view(num, 1, 1, 1),
                          out.flip(-1), out)
    return out


class CropResizeFlip(CropSettings, ViewAugment):
    """Random resized crop to ``size``, then a horizontal flip with probability
    ``flip_prob`` (its settings: :class:`~pmsn_mm.views.CropSettings`). Random
    numbers: the boxes (its own draw, before the group's shared one) and column
    9 of the shared draw (the flip).
    """

    columns = (9, )
    coin_prob = 'flip_prob'

    def draw(self, draws: ViewDraws, group: Dict[str, Any]) -> None:
        corner, extent = crop_corners(
            torch.stack([draws.widths, draws.heights], 1), draws.views,
            group['scale'], group['ratio'], generator=draws.generator)
        draws.extra['crop'] = (corner, extent)

    def apply(self, images: Tensor, group: Dict[str, Any],
              draws: ViewDraws) -> Tensor:
        height, width = images.shape[-2:]
        size = (group['size'] or height, group['size'] or width)
        corner, extent = draws.extra['crop']
        flip = draws.coin(self.columns[0], group['flip_prob'], 'flip coin')
        return crop_resize(images, corner, extent, size, flip)
