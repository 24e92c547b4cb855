"""Batched, per-sample view augmentations on the device.

Pure functions on whole batches (any device), the one augmentation path of
:class:`~pmsn_mm.models.utils.BatchAugmentPreprocessor`: for the in-memory
toy set and for decoded real images of mixed sizes alike. Every image gets
its own random parameters, drawn with the distributions of the per-sample
transforms (mmpretrain's ``RandomResizedCrop``/``RandomFlip``/
``ColorJitter``/``RandomGrayscale``/``GaussianBlur``/``Solarize``, the
recipe of MSN, SwAV and VICReg):

- :func:`sample_crop_boxes`: random-resized-crop boxes in each image's own
  coordinates (area fraction uniform in ``scale``, log-uniform aspect ratio,
  up to ``max_attempts`` tries, then the central fallback);
- :func:`resized_crop_flip`: crop + bilinear resize of many boxes of a
  padded batch in one ``torchvision.ops.roi_align`` call (its adaptive
  sampling averages several bilinear samples per output pixel when a crop
  is shrunk, i.e. it antialiases like PIL's resize), then mirroring;
  :func:`replicate_edges` first makes the padding of a mixed-size batch a
  copy of each image's last row and column, so no crop sees it;
- :func:`sample_color_params` and :func:`color_jitter`: brightness,
  contrast, saturation and hue (torchvision's formulas, kornia's
  functionals) in a random order per image, with probability ``prob``;
- :func:`random_grayscale`, :func:`gaussian_blur` (PIL's box-blur
  approximation of a Gaussian, per-image sigma), :func:`solarize`.

Images are float tensors with values in [0, 255] (RGB for the colour ops).
kornia is imported when a colour or blur op first runs (importing it costs
about a second).
"""
import math
from typing import Dict, Optional, Sequence, Union

import torch
from torch import Tensor

from ...utils.validation import (check_int, check_number, check_probability,
                                 check_range_pair)

SizeLike = Union[int, Tensor]
#: Identity values of (brightness, contrast, saturation, hue).
NEUTRAL_COLOR = (1.0, 1.0, 1.0, 0.0)


def _sizes(size: SizeLike, batch_size: int, device) -> Tensor:
    if isinstance(size, Tensor):
        if size.shape != (batch_size, ):
            raise ValueError(f'per-image sizes must have shape '
                             f'({batch_size},), got {tuple(size.shape)}.')
        return size.to(device=device, dtype=torch.float32)
    return torch.full((batch_size, ), float(size), device=device)


def sample_crop_boxes(batch_size: int,
                      height: SizeLike,
                      width: SizeLike,
                      scale: Sequence[float] = (0.08, 1.0),
                      ratio: Sequence[float] = (3. / 4., 4. / 3.),
                      max_attempts: int = 10,
                      generator: Optional[torch.Generator] = None,
                      device: Optional[torch.device] = None) -> Tensor:
    """Random-resized-crop boxes, one per image, in its own coordinates.

    Args:
        batch_size: Number of boxes B.
        height: Image height H in pixels: an int, or a tensor of shape (B,)
            (each image of a mixed-size batch).
        width: Image width W, as ``height``.
        scale: Range of the crop area as a fraction of the image, in (0, 1].
        ratio: Range of the crop aspect ratio w / h, > 0.
        max_attempts: Tries per image before the central fallback, >= 1.
        generator: Optional torch generator.
        device: Device of the result.

    Returns:
        Long tensor of shape (B, 4): ``(top, left, h, w)`` in pixels.
    """
    smin, smax = check_range_pair('scale', scale, 0.0, 1.0, low_open=True)
    rmin, rmax = check_range_pair('ratio', ratio, 0.0, low_open=True)
    max_attempts = check_int('max_attempts', max_attempts, 1)
    kw = dict(generator=generator, device=device)
    heights = _sizes(height, batch_size, device)
    widths = _sizes(width, batch_size, device)
    area = (heights * widths)[:, None]
    target_area = area * (smin + (smax - smin) *
                          torch.rand(batch_size, max_attempts, **kw))
    log_ratio = math.log(rmin) + (math.log(rmax) - math.log(rmin)) * \
        torch.rand(batch_size, max_attempts, **kw)
    aspect = log_ratio.exp()
    w = torch.round(torch.sqrt(target_area * aspect))
    h = torch.round(torch.sqrt(target_area / aspect))
    valid = (w > 0) & (w <= widths[:, None]) & (h > 0) & (
        h <= heights[:, None])
    first = valid.float().argmax(dim=1, keepdim=True)  # first valid try
    w = w.gather(1, first).squeeze(1)
    h = h.gather(1, first).squeeze(1)
    ok = valid.any(dim=1)
    # central fallback, as mmpretrain: the largest box of an extreme ratio
    in_ratio = widths / heights
    fw = torch.where(in_ratio < rmin, widths,
                     torch.where(in_ratio > rmax,
                                 torch.round(heights * rmax), widths))
    fh = torch.where(in_ratio < rmin, torch.round(widths / rmin), heights)
    w = torch.where(ok, w, fw)
    h = torch.where(ok, h, fh)
    # offsets uniform over the integers 0..H-h (0..W-w)
    u = torch.rand(batch_size, 2, **kw)
    top = torch.floor(u[:, 0] * (heights - h + 1))
    left = torch.floor(u[:, 1] * (widths - w + 1))
    top = torch.where(ok, top, torch.floor((heights - fh) / 2))
    left = torch.where(ok, left, torch.floor((widths - fw) / 2))
    return torch.stack([top, left, h, w], dim=1).long()


def replicate_edges(images: Tensor, heights: Tensor,
                    widths: Tensor) -> Tensor:
    """Fill the padding of a mixed-size batch with each image's last row
    and column (clamp-to-edge), so that bilinear samples near an image's
    border never mix in padding.

    Args:
        images: Tensor of shape (B, C, H, W), image ``i`` in the top-left
            ``heights[i] x widths[i]`` corner.
        heights: Long tensor of shape (B,).
        widths: Long tensor of shape (B,).

    Returns:
        Tensor of shape (B, C, H, W).
    """
    num, channels, height, width = images.shape
    rows = torch.minimum(
        torch.arange(height, device=images.device)[None],
        heights.to(images.device)[:, None] - 1)  # (B, H)
    cols = torch.minimum(
        torch.arange(width, device=images.device)[None],
        widths.to(images.device)[:, None] - 1)  # (B, W)
    out = images.gather(
        2, rows[:, None, :, None].expand(num, channels, height, width))
    return out.gather(
        3, cols[:, None, None, :].expand(num, channels, height, width))


def resized_crop_flip(images: Tensor,
                      boxes: Tensor,
                      size: Sequence[int],
                      flip: Optional[Tensor] = None,
                      batch_index: Optional[Tensor] = None) -> Tensor:
    """Crop boxes out of a batch, resize them bilinearly, optionally mirror.

    One ``torchvision.ops.roi_align`` call (``aligned=True``: pixel centres
    at half-integers, as PIL, OpenCV and ``grid_sample(align_corners=
    False)``; adaptive sampling: ``ceil(crop / output)`` bilinear samples
    per output pixel and axis are averaged, so shrinking antialiases and
    enlarging is plain bilinear). Outside the batch tensor, samples clamp to
    its border.

    Args:
        images: Float tensor of shape (N, C, H, W).
        boxes: Tensor of shape (B, 4), ``(top, left, h, w)`` in pixels.
        size: Output ``(h, w)``.
        flip: Optional bool tensor of shape (B,): mirror horizontally.
        batch_index: Optional long tensor of shape (B,): the image of each
            box (default: box ``i`` of image ``i``, B = N), so that many
            views of a batch come out of one call.

    Returns:
        Tensor of shape (B, C, size[0], size[1]).
    """
    from torchvision.ops import roi_align
    num = boxes.shape[0]
    if batch_index is None:
        batch_index = torch.arange(num, device=images.device)
    boxes = boxes.to(device=images.device, dtype=images.dtype)
    top, left, h, w = boxes.unbind(dim=1)
    rois = torch.stack([
        batch_index.to(images.device, images.dtype), left, top, left + w,
        top + h
    ], dim=1)
    out = roi_align(images, rois, tuple(int(s) for s in size),
                    spatial_scale=1.0, sampling_ratio=-1, aligned=True)
    if flip is not None:
        flip = flip.to(images.device).view(-1, 1, 1, 1)
        out = torch.where(flip, out.flip(-1), out)
    return out


def sample_color_params(num: int,
                        brightness: float = 0.0,
                        contrast: float = 0.0,
                        saturation: float = 0.0,
                        hue: float = 0.0,
                        prob: float = 1.0,
                        generator: Optional[torch.Generator] = None,
                        device: Optional[torch.device] = None
                        ) -> Dict[str, Tensor]:
    """Per-image parameters of :func:`color_jitter`.

    As torchvision's and mmpretrain's ``ColorJitter`` inside a
    ``RandomApply(prob)``: brightness, contrast and saturation factors
    uniform in ``[max(0, 1 - s), 1 + s]``, hue uniform in ``[-hue, hue]``,
    the order of the four a uniform random permutation; per image.

    Args:
        num: Number of images.
        brightness: Brightness strength, >= 0.
        contrast: Contrast strength, >= 0.
        saturation: Saturation strength, >= 0.
        hue: Hue strength in [0, 0.5] (a fraction of a turn).
        prob: Probability of jittering an image at all, in [0, 1].
        generator: Optional torch generator.
        device: Device of the result.

    Returns:
        ``factors`` (num, 4) float (identity values where not applied),
        ``order`` (num, 4) long (a permutation of 0..3 per image: 0
        brightness, 1 contrast, 2 saturation, 3 hue) and ``apply`` (num,)
        bool.
    """
    strengths = [
        check_number('brightness', brightness, 0.0),
        check_number('contrast', contrast, 0.0),
        check_number('saturation', saturation, 0.0)
    ]
    hue = check_number('hue', hue, 0.0, 0.5)
    prob = check_probability('prob', prob)
    u = torch.rand(num, 9, generator=generator, device=device)
    apply = u[:, 0] < prob
    lows = [max(0.0, 1 - s) for s in strengths] + [-hue]
    highs = [1 + s for s in strengths] + [hue]
    low = torch.tensor(lows, device=u.device)
    high = torch.tensor(highs, device=u.device)
    factors = low + (high - low) * u[:, 1:5]
    neutral = torch.tensor(NEUTRAL_COLOR, device=u.device)
    factors = torch.where(apply[:, None], factors, neutral)
    order = u[:, 5:9].argsort(dim=1)
    return dict(factors=factors, order=order, apply=apply)


def _color_ops():
    from kornia.enhance import (adjust_brightness_accumulative,
                                adjust_contrast_with_mean_subtraction,
                                adjust_hue,
                                adjust_saturation_with_gray_subtraction)
    return (
        adjust_brightness_accumulative,
        adjust_contrast_with_mean_subtraction,
        adjust_saturation_with_gray_subtraction,
        lambda x, f: adjust_hue(x, f * 2 * math.pi),  # turns -> radians
    )


def color_jitter(images: Tensor, params: Dict[str, Tensor]) -> Tensor:
    """Brightness, contrast, saturation and hue, in each image's order.

    Step ``k`` applies, to every image, the adjustment ``order[:, k]`` with
    its factor (kornia's torchvision-consistent functionals: brightness
    multiplies, contrast blends with the grey mean, saturation with the
    grey image, hue rotates in HSV), computing each adjustment once on the
    images that need it; the result is clipped to [0, 255] after every
    step, as the per-image transforms do.

    Args:
        images: Float tensor of shape (B, C, H, W) in [0, 255]; RGB (C = 3)
            for saturation and hue, any C for brightness and contrast.
        params: Output of :func:`sample_color_params` for B images.

    Returns:
        Tensor of shape (B, C, H, W) in [0, 255].
    """
    factors, order = params['factors'], params['order']
    neutral = torch.tensor(NEUTRAL_COLOR, device=factors.device)
    active = factors != neutral  # (B, 4)
    if not bool(active.any()):
        return images
    if images.shape[1] != 3 and bool(active[:, 2:].any()):
        raise ValueError('saturation and hue need RGB images (C = 3), got '
                         f'C = {images.shape[1]}.')
    ops = _color_ops()
    out = images / 255.0
    for step in range(4):
        for op, adjust in enumerate(ops):
            picked = (order[:, step] == op) & active[:, op]
            if not bool(picked.any()):
                continue
            index = picked.nonzero().squeeze(1)
            out[index] = adjust(out[index], factors[index, op]).clamp(0, 1)
    return out * 255.0


def random_grayscale(images: Tensor, mask: Tensor) -> Tensor:
    """Replace the masked RGB images by their luma, kept on 3 channels
    (``RandomGrayscale(keep_channels=True)``; ITU-R 601 weights).

    Args:
        images: Float tensor of shape (B, 3, H, W).
        mask: Bool tensor of shape (B,).

    Returns:
        Tensor of shape (B, 3, H, W).
    """
    if not bool(mask.any()):
        return images
    weights = images.new_tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)
    grey = (images * weights).sum(dim=1, keepdim=True).expand_as(images)
    return torch.where(mask.view(-1, 1, 1, 1), grey, images)


def box_blur_radius(sigma: Tensor, passes: int = 3) -> Tensor:
    """Radius of the box blur that, applied ``passes`` times, has the
    variance of a Gaussian of standard deviation ``sigma``: PIL's
    ``_gaussian_blur_radius`` (the extended box of Gwosdek et al., 2011:
    weight 1 within ``floor(r)`` pixels of the centre, ``r - floor(r)`` at
    ``floor(r) + 1``).

    Args:
        sigma: Float tensor of any shape, > 0.
        passes: Number of box passes, >= 1.

    Returns:
        Float tensor of the shape of ``sigma``: the radius ``r >= 0``.
    """
    var = sigma * sigma / passes
    whole = torch.floor((torch.sqrt(12.0 * var + 1.0) - 1.0) / 2.0)
    frac = (2 * whole + 1) * (whole * (whole + 1) - 3 * var) / (
        6 * (var - (whole + 1)**2))
    return whole + frac


def gaussian_blur(images: Tensor,
                  sigma: Tensor,
                  mask: Tensor,
                  max_sigma: float,
                  passes: int = 3) -> Tensor:
    """Gaussian-blur the masked images, each with its own sigma, as PIL's
    ``ImageFilter.GaussianBlur(radius=sigma)`` (the blur of official MSN
    and of mmpretrain's ``GaussianBlur``): ``passes`` extended box blurs of
    :func:`box_blur_radius` along each axis, each pass with replicated
    borders. (A sampled Gaussian kernel of the same sigma has a variance
    well short of sigma ** 2 for sigma < ~0.5 and barely blurs below ~0.3.)

    Every image runs through the same grouped convolutions (the unmasked
    ones with an identity kernel), so nothing waits on the mask.

    Args:
        images: Float tensor of shape (B, C, H, W).
        sigma: Float tensor of shape (B,), > 0.
        mask: Bool tensor of shape (B,).
        max_sigma: The largest sigma that can be drawn (sets the kernel
            width, ``2 * floor(r(max_sigma)) + 3``).
        passes: Box passes per axis (PIL: 3).

    Returns:
        Tensor of shape (B, C, H, W).
    """
    from kornia.filters import filter2d_separable
    passes = check_int('passes', passes, 1)
    var = max_sigma * max_sigma / passes
    half = math.floor((math.sqrt(12.0 * var + 1.0) - 1.0) / 2.0) + 1
    radius = box_blur_radius(sigma.to(device=images.device,
                                      dtype=images.dtype), passes)
    whole = torch.floor(radius).clamp(max=half - 1)[:, None]
    offset = torch.arange(-half, half + 1, device=images.device,
                          dtype=images.dtype).abs()
    box = torch.where(offset <= whole, 1.0,
                      torch.where(offset == whole + 1, radius[:, None] - whole,
                                  0.0))
    box = box / box.sum(dim=1, keepdim=True)
    identity = (offset == 0).to(images.dtype)
    mask = mask.to(images.device)
    box = torch.where(mask[:, None], box, identity)
    out = images
    for _ in range(passes):
        out = filter2d_separable(out, box, box, border_type='replicate')
    return torch.where(mask.view(-1, 1, 1, 1), out, images)


def solarize(images: Tensor, mask: Tensor,
             threshold: float = 128.0) -> Tensor:
    """Invert the pixels at or above ``threshold`` of the masked images
    (mmcv's ``solarize``: ``x < thr ? x : 255 - x``).

    Args:
        images: Float tensor of shape (B, C, H, W) in [0, 255].
        mask: Bool tensor of shape (B,).
        threshold: Threshold on the [0, 255] scale.

    Returns:
        Tensor of shape (B, C, H, W).
    """
    flipped = torch.where(images < threshold, images, 255.0 - images)
    return torch.where(mask.view(-1, 1, 1, 1), flipped, images)
