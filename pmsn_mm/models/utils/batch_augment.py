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
  functionals; :func:`rotate_hue`) in a random order per image, with
  probability ``prob``;
- :func:`random_grayscale`, :func:`gaussian_blur` (PIL's box-blur
  approximation of a Gaussian, per-image sigma), :func:`solarize`.

Images are float tensors with values in [0, 255] (RGB for the colour ops).
No function reads a device value on the host (no host sync), and the ops
each one dispatches depend only on shapes and host-side settings, not on
the batch size or the random draws: masks select with ``torch.where``.
kornia is imported when a colour or blur op first runs (importing it costs
about a second).
"""
import math
from typing import Any, Dict, Optional, Sequence, Union

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
                        ) -> Dict[str, Any]:
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
        brightness, 1 contrast, 2 saturation, 3 hue), ``apply`` (num,)
        bool, and ``enabled``, a host-side tuple of four Python bools: the
        adjustments that can change an image at all (strength > 0 and
        ``prob`` > 0), so that :func:`color_jitter` skips the others
        without reading device values.
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
    enabled = tuple(prob > 0 and s > 0 for s in strengths + [hue])
    return dict(factors=factors, order=order, apply=apply, enabled=enabled)


def _kept_in_order(order: Tensor, keep: Tensor, count: int) -> Tensor:
    """The entries of each row of ``order`` that ``keep`` marks, in their
    order, when every row keeps the same number ``count`` (a stable sort
    on a fixed-size key, no gather of a data-dependent size).

    Args:
        order: Long tensor of shape (B, K).
        keep: Bool tensor of shape (B, K) with ``count`` True per row.
        count: Entries kept per row (host-side).

    Returns:
        Long tensor of shape (B, count).
    """
    steps = order.shape[1]
    key = torch.arange(steps, device=order.device) + steps * (~keep).long()
    return order.gather(1, key.argsort(dim=1)[:, :count])


def _blend_step(images: Tensor, factors: Tensor, op: Tensor,
                contrast: bool, saturation: bool) -> Tensor:
    """One brightness / contrast / saturation step, each image its own.

    The three are blends ``x * f + ref * (1 - f)`` with the reference
    ``0`` (brightness), the grey mean (contrast) or the grey image
    (saturation), as kornia's torchvision-consistent functionals write
    them (computed as ``torch.lerp``, equal to float rounding); ``op`` -1
    is the identity (``f = 1``, exactly the input).

    Args:
        images: Float tensor of shape (B, C, H, W) in [0, 1].
        factors: Float tensor of shape (B, 4) (see
            :func:`sample_color_params`).
        op: Long tensor of shape (B,), values in {-1, 0, 1, 2}.
        contrast: Whether contrast can occur (else no grey mean).
        saturation: Whether saturation can occur (else no per-pixel
            reference).

    Returns:
        Tensor of shape (B, C, H, W) in [0, 1].
    """
    factor = factors.gather(1, op.clamp(min=0)[:, None]).squeeze(1)
    factor = torch.where(op < 0, torch.ones_like(factor), factor)
    factor = factor.to(images.dtype).view(-1, 1, 1, 1)
    if not (contrast or saturation):  # brightness (or identity) only
        return (images * factor).clamp(0.0, 1.0)
    op = op.view(-1, 1, 1, 1)
    if images.shape[1] == 3:  # grey as kornia's functionals compute it
        from kornia.color import rgb_to_grayscale
        grey = rgb_to_grayscale(images)
        mean = grey.mean((-2, -1), True)
    else:  # contrast only (saturation needs RGB)
        grey, mean = None, images.mean((-3, -2, -1), True)
    ref = torch.where(op == 1, mean, torch.zeros_like(mean))
    if saturation:
        ref = torch.where(op == 2, grey, ref)
    # ref + f * (x - ref): kornia's blends to float rounding, in one pass
    return torch.lerp(ref, images, factor).clamp(0.0, 1.0)


def rotate_hue(images: Tensor, turns: Tensor) -> Tensor:
    """Rotate the hue of RGB images in HSV, each image by its own amount
    (torchvision's ``adjust_hue``: value and saturation kept).

    The HSV round trip in closed form: with ``V = max``, ``C = max - min``
    and the hue ``h`` in sextants, channel ``n`` (5 red, 3 green, 1 blue)
    is ``V - C * clamp(min(k, 4 - k), 0, 1)`` for ``k = (n + h') mod 6``,
    ``h'`` the rotated hue; equal to kornia's ``rgb_to_hsv`` /
    ``hsv_to_rgb`` to float rounding (same sextant tie-breaking), in about
    a third of the element-wise passes.

    Args:
        images: Float tensor of shape (B, 3, H, W) in [0, 1].
        turns: Float tensor of shape (B,): the rotation, a fraction of a
            turn (hue factor of ``ColorJitter``).

    Returns:
        Tensor of shape (B, 3, H, W) in [0, 1].
    """
    red, green, blue = images.unbind(dim=1)
    top = images.amax(dim=1)
    chroma = top - images.amin(dim=1)
    safe = torch.where(chroma == 0, torch.ones_like(chroma), chroma)
    sextant = torch.where((red >= green) & (red >= blue),
                          (green - blue) / safe,
                          torch.where(green >= blue,
                                      (blue - red) / safe + 2.0,
                                      (red - green) / safe + 4.0))
    shift = 6.0 * turns.to(device=images.device, dtype=images.dtype)
    sextant = sextant + shift.view(-1, 1, 1)
    channel = images.new_tensor([5.0, 3.0, 1.0]).view(1, 3, 1, 1)
    k = torch.remainder(sextant[:, None] + channel, 6.0)
    ramp = torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)
    return top[:, None] - chroma[:, None] * ramp


def color_jitter(images: Tensor, params: Dict[str, Any]) -> Tensor:
    """Brightness, contrast, saturation and hue, in each image's order.

    Each image applies its four adjustments in its own ``order`` (kornia's
    torchvision-consistent functionals: brightness multiplies, contrast
    blends with the grey mean, saturation with the grey image, hue rotates
    in HSV, :func:`rotate_hue`), the result clipped to [0, 255] after every
    step, as the per-sample transforms do. Batched with a fixed sequence
    of ops (no host sync, nothing that grows with the batch): brightness,
    contrast and saturation are one blend step with a per-image reference
    and factor (an unmoved image blends with factor 1, exactly the identity);
    the adjustments that ``params['enabled']`` rules out are dropped from
    every order; when hue is enabled, each image's blends before its hue
    step run first (one step per slot, the identity where an image has
    fewer), then the hue rotation (kept only where the hue factor is not
    0), then the blends after it.

    Args:
        images: Float tensor of shape (B, C, H, W) in [0, 255]; RGB (C = 3)
            for saturation and hue, any C for brightness and contrast.
        params: Output of :func:`sample_color_params` for B images; without
            ``enabled``, every adjustment counts as enabled.

    Returns:
        Tensor of shape (B, C, H, W) in [0, 255].
    """
    factors, order = params['factors'], params['order']
    enabled = tuple(bool(e) for e in params.get('enabled', (True, ) * 4))
    if not any(enabled):
        return images
    if images.shape[1] != 3 and (enabled[2] or enabled[3]):
        raise ValueError('saturation and hue need RGB images (C = 3), got '
                         f'C = {images.shape[1]}.')
    factors = factors.to(images.device)
    order = order.to(images.device)
    on = torch.tensor(enabled, device=images.device)
    count = sum(enabled)
    seq = _kept_in_order(order, on[order], count)  # (B, count)
    out = images / 255.0
    if not enabled[3]:
        for step in range(count):
            out = _blend_step(out, factors, seq[:, step], *enabled[1:3])
        return out * 255.0
    # hue at position `pos` of each image's sequence; blends around it
    is_hue = seq == 3
    pos = is_hue.long().argmax(dim=1)  # (B,)
    blends = count - 1
    if blends:
        bseq = _kept_in_order(seq, ~is_hue, blends)  # (B, blends)
        slots = torch.arange(blends, device=images.device)[None]
        pre = torch.where(slots < pos[:, None], bseq, -1)
        after = pos[:, None] + slots
        post = bseq.gather(1, after.clamp(max=blends - 1))
        post = torch.where(after < blends, post, -1)
    for step in range(blends):
        out = _blend_step(out, factors, pre[:, step], *enabled[1:3])
    hue = factors[:, 3].to(images.dtype)
    rotated = rotate_hue(out, hue).clamp(0.0, 1.0)
    out = torch.where((hue != 0).view(-1, 1, 1, 1), rotated, out)
    for step in range(blends):
        out = _blend_step(out, factors, post[:, step], *enabled[1:3])
    return out * 255.0


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
    weights = images.new_tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)
    grey = (images * weights).sum(dim=1, keepdim=True).expand_as(images)
    return torch.where(mask.to(images.device).view(-1, 1, 1, 1), grey,
                       images)


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
