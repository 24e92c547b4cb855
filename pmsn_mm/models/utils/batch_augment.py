"""Batched, on-device versions of mmpretrain's view augmentations.

Pure functions on whole batches (any device), so that toy-scale training does
not spend its time in per-sample numpy transforms:

- :func:`sample_crop_boxes` draws ``RandomResizedCrop`` boxes with the same
  distribution as ``mmpretrain.datasets.transforms.RandomResizedCrop``
  (``rand_crop_params``: area fraction uniform in ``scale``, log-uniform
  aspect ratio, up to ``max_attempts`` tries, then the central fallback);
- :func:`resized_crop_flip` crops, resizes (bilinear) and optionally mirrors
  every image with one ``grid_sample``;
- :func:`color_jitter` applies ``ColorJitter(brightness, contrast)`` in a
  random order per image, as mmpretrain does (mmcv's formulas: brightness
  scales the image, contrast blends it with its mean grey level), each
  image independently with probability ``prob`` (``RandomApply``).
"""
import math
from typing import Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor


def _check_range(name: str, value: Sequence[float], low: float,
                 high: float) -> Tuple[float, float]:
    if len(value) != 2 or not low < value[0] <= value[1] <= high:
        raise ValueError(f'{name} must be (min, max) with {low} < min <= max '
                         f'<= {high}, got {tuple(value)}.')
    return float(value[0]), float(value[1])


def sample_crop_boxes(batch_size: int,
                      height: int,
                      width: int,
                      scale: Sequence[float] = (0.08, 1.0),
                      ratio: Sequence[float] = (3. / 4., 4. / 3.),
                      max_attempts: int = 10,
                      generator: Optional[torch.Generator] = None,
                      device: Optional[torch.device] = None) -> Tensor:
    """Random-resized-crop boxes, one per image.

    Args:
        batch_size: Number of boxes B.
        height: Image height H in pixels.
        width: Image width W in pixels.
        scale: Range of the crop area as a fraction of the image, in (0, 1].
        ratio: Range of the crop aspect ratio w / h, > 0.
        max_attempts: Tries per image before the central fallback, >= 1.
        generator: Optional torch generator.
        device: Device of the result.

    Returns:
        Long tensor of shape (B, 4): ``(top, left, h, w)`` in pixels.
    """
    smin, smax = _check_range('scale', scale, 0.0, 1.0)
    rmin, rmax = _check_range('ratio', ratio, 0.0, math.inf)
    if max_attempts < 1:
        raise ValueError(f'max_attempts must be >= 1, got {max_attempts}.')
    kw = dict(generator=generator, device=device)
    area = height * width
    target_area = area * (smin + (smax - smin) *
                          torch.rand(batch_size, max_attempts, **kw))
    log_ratio = math.log(rmin) + (math.log(rmax) - math.log(rmin)) * \
        torch.rand(batch_size, max_attempts, **kw)
    aspect = log_ratio.exp()
    w = torch.round(torch.sqrt(target_area * aspect))
    h = torch.round(torch.sqrt(target_area / aspect))
    valid = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = valid.float().argmax(dim=1, keepdim=True)  # first valid try
    w = w.gather(1, first).squeeze(1)
    h = h.gather(1, first).squeeze(1)
    ok = valid.any(dim=1)
    # central fallback, as mmpretrain
    in_ratio = width / height
    if in_ratio < rmin:
        fw, fh = width, int(round(width / rmin))
    elif in_ratio > rmax:
        fw, fh = int(round(height * rmax)), height
    else:
        fw, fh = width, height
    w = torch.where(ok, w, torch.full_like(w, fw))
    h = torch.where(ok, h, torch.full_like(h, fh))
    # offsets uniform over the integers 0..H-h (0..W-w)
    u = torch.rand(batch_size, 2, **kw)
    top = torch.floor(u[:, 0] * (height - h + 1))
    left = torch.floor(u[:, 1] * (width - w + 1))
    top = torch.where(ok, top, torch.full_like(top, (height - fh) // 2))
    left = torch.where(ok, left, torch.full_like(left, (width - fw) // 2))
    return torch.stack([top, left, h, w], dim=1).long()


def resized_crop_flip(images: Tensor,
                      boxes: Tensor,
                      size: Sequence[int],
                      flip: Optional[Tensor] = None) -> Tensor:
    """Crop each image to its box, resize it bilinearly, optionally mirror.

    Args:
        images: Float tensor of shape (B, C, H, W).
        boxes: Tensor of shape (B, 4), ``(top, left, h, w)`` in pixels.
        size: Output ``(h, w)``.
        flip: Optional bool tensor of shape (B,): mirror horizontally.

    Returns:
        Tensor of shape (B, C, size[0], size[1]).
    """
    num, _, height, width = images.shape
    boxes = boxes.to(images.dtype)
    top, left, h, w = boxes.unbind(dim=1)
    # affine map from output to input coordinates, align_corners=False
    theta = images.new_zeros(num, 2, 3)
    sx = w / width
    if flip is not None:
        sx = torch.where(flip.to(images.device), -sx, sx)
    theta[:, 0, 0] = sx
    theta[:, 0, 2] = (2 * left + w) / width - 1
    theta[:, 1, 1] = h / height
    theta[:, 1, 2] = (2 * top + h) / height - 1
    grid = F.affine_grid(
        theta, (num, images.shape[1], *size), align_corners=False)
    return F.grid_sample(
        images, grid, mode='bilinear', padding_mode='border',
        align_corners=False)


def color_jitter(images: Tensor,
                 brightness: float = 0.4,
                 contrast: float = 0.4,
                 prob: float = 0.8,
                 generator: Optional[torch.Generator] = None) -> Tensor:
    """Random brightness and contrast on images in [0, 255].

    Per image, with probability ``prob``: a brightness factor in
    ``[max(0, 1 - brightness), 1 + brightness]`` (``x * f``) and a contrast
    factor in ``[max(0, 1 - contrast), 1 + contrast]`` (``f * x + (1 - f) *
    mean_grey``) are applied in a random order, each followed by clipping
    to [0, 255].

    Args:
        images: Float tensor of shape (B, C, H, W), values in [0, 255].
        brightness: Brightness strength, >= 0.
        contrast: Contrast strength, >= 0.
        prob: Probability of jittering an image, in [0, 1].
        generator: Optional torch generator.

    Returns:
        Tensor of shape (B, C, H, W).
    """
    if brightness < 0 or contrast < 0:
        raise ValueError('brightness and contrast must be >= 0, got '
                         f'{brightness} and {contrast}.')
    if not 0 <= prob <= 1:
        raise ValueError(f'prob must be in [0, 1], got {prob}.')
    num = images.shape[0]
    kw = dict(generator=generator, device=images.device)
    u = torch.rand(num, 4, **kw).to(images.dtype)
    apply = u[:, 0] < prob
    b_lo = max(0.0, 1 - brightness)
    c_lo = max(0.0, 1 - contrast)
    fb = b_lo + (1 + brightness - b_lo) * u[:, 1]
    fc = c_lo + (1 + contrast - c_lo) * u[:, 2]
    fb = torch.where(apply, fb, torch.ones_like(fb)).view(-1, 1, 1, 1)
    fc = torch.where(apply, fc, torch.ones_like(fc)).view(-1, 1, 1, 1)
    contrast_first = (u[:, 3] < 0.5).view(-1, 1, 1, 1)

    def _bright(x: Tensor) -> Tensor:
        return (x * fb).clamp(0, 255)

    def _contrast(x: Tensor) -> Tensor:
        grey = x.mean(dim=1, keepdim=True) if x.shape[1] != 3 else (
            0.299 * x[:, 2:3] + 0.587 * x[:, 1:2] + 0.114 * x[:, 0:1])
        mean = grey.mean(dim=(1, 2, 3), keepdim=True).round()
        return (fc * x + (1 - fc) * mean).clamp(0, 255)

    return torch.where(contrast_first, _bright(_contrast(images)),
                       _contrast(_bright(images)))
