"""Batched, per-sample view augmentations on the device.

Pure functions on whole batches (any device), the one augmentation path of
:class:`~pmsn_mm.models.BatchAugmentPreprocessor`: for the in-memory
toy set and for decoded real images of mixed sizes alike. Every image gets
its own random parameters, drawn with the distributions of the per-sample
transforms (torchvision's and mmpretrain's ``RandomResizedCrop``/
``RandomHorizontalFlip``/``ColorJitter``/``RandomGrayscale`` and PIL's
``GaussianBlur``/``Solarize`` as official MSN, SwAV and VICReg apply them):

- :func:`crop_corners` (:func:`sample_crop_boxes`): random-resized-crop
  boxes in each image's own coordinates (area fraction uniform in
  ``scale``, log-uniform aspect ratio, up to ``max_attempts`` tries, then
  the central fallback), the views of a batch in one draw;
- :func:`crop_resize` (:func:`resized_crop_flip`): crop + bilinear resize of
  many boxes of a padded batch in one ``torchvision.ops.roi_align`` call
  (its adaptive sampling averages several bilinear samples per output pixel
  when a crop is shrunk, i.e. it antialiases like PIL's resize), then
  mirroring; :func:`replicate_edges` first makes the padding of a mixed-size
  batch a copy of each image's last row and column, so no crop sees it;
- :func:`color_params` (:func:`sample_color_params`) and
  :func:`color_jitter`: brightness, contrast, saturation and hue in a random
  order per image, with probability ``prob``: the three blends as one
  batched 3 x 3 colour matrix per step (``baddbmm``), the hue in closed
  form on PIL's 8-bit hue circle (:func:`rotate_hue`);
- :func:`random_grayscale`, :func:`gaussian_blur` (PIL's box-blur
  approximation of a Gaussian, per-image sigma, one grouped 2-D convolution
  per box pass), :func:`solarize`.

Images are float tensors with values in [0, 255] (RGB for the colour ops).
No function reads a device value on the host (no host sync), and the ops
each one dispatches depend only on shapes and host-side settings, not on
the batch size or the random draws: masks select with ``torch.where``.
Small constants (probabilities, colour weights, the jitter's schedule
tables) are built once per device (:func:`device_constant`), never from a
Python list per step.

Own code rather than kornia's functionals (used as the reference in the
tests): the colour chain as one colour matrix per step dispatches 128 ops
for MSN's 12 views where kornia's blends took 504, and the hue follows
PIL's 8-bit hue circle as official MSN's torchvision-on-PIL chain does.
"""
import functools
import math
from typing import (Any, Callable, Dict, Hashable, Optional, Sequence, Tuple,
                    Union)

import torch
import torch.nn.functional as F
from torch import Tensor

from ...utils.validation import (check_int, check_number, check_probability,
                                 check_range_pair)

SizeLike = Union[int, Tensor]
#: Identity values of (brightness, contrast, saturation, hue).
NEUTRAL_COLOR = (1.0, 1.0, 1.0, 0.0)
#: ITU-R 601 luma weights of (R, G, B): kornia's ``rgb_to_grayscale``,
#: PIL's ``convert('L')`` (there in 16-bit fixed point).
LUMA = (0.299, 0.587, 0.114)

_CONSTANTS: Dict[Tuple[Hashable, torch.device], Tensor] = {}


def device_constant(key: Hashable, device: Union[str, torch.device],
                    build: Callable[[], Any],
                    dtype: torch.dtype = torch.float32) -> Tensor:
    """A small constant tensor on ``device``, built once and cached.

    The first call per ``(key, device)`` uploads ``build()`` (a nested list
    or a CPU tensor); later calls return the cached tensor: no host-to-device
    copy per step.

    Args:
        key: Hashable name of the constant, unique to its values.
        device: Where the constant lives.
        build: Returns the values.
        dtype: dtype of the tensor.

    Returns:
        The cached tensor (never modify it in place).
    """
    device = torch.device(device)
    full_key = (key, dtype, device)
    cached = _CONSTANTS.get(full_key)
    if cached is None:
        values = build()
        cached = (values if isinstance(values, Tensor) else
                  torch.tensor(values, dtype=dtype)).to(device=device,
                                                        dtype=dtype)
        _CONSTANTS[full_key] = cached
    return cached


# ------------------------------------------------------------------- crops
def crop_corners(sizes: Tensor,
                 views: int = 1,
                 scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3. / 4., 4. / 3.),
                 max_attempts: int = 10,
                 generator: Optional[torch.Generator] = None
                 ) -> Tuple[Tensor, Tensor]:
    """Random-resized-crop boxes of ``views`` views of every image, in each
    image's own coordinates (mmpretrain's and torchvision's
    ``RandomResizedCrop``: area fraction uniform in ``scale``, log-uniform
    aspect ratio ``w / h``, the first of ``max_attempts`` tries that fits,
    else the central box of the extreme ratio; offsets uniform over the
    whole pixels).

    Args:
        sizes: Tensor of shape (N, 2): each image's ``(width, height)``.
        views: Boxes per image; box ``v * N + i`` is view ``v`` of image
            ``i`` (view-major).
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


def sample_crop_boxes(batch_size: int,
                      height: SizeLike,
                      width: SizeLike,
                      scale: Sequence[float] = (0.08, 1.0),
                      ratio: Sequence[float] = (3. / 4., 4. / 3.),
                      max_attempts: int = 10,
                      generator: Optional[torch.Generator] = None,
                      device: Optional[torch.device] = None) -> Tensor:
    """Random-resized-crop boxes, one per image (:func:`crop_corners`).

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
    sides = []
    for size in (width, height):
        if isinstance(size, Tensor):
            if size.shape != (batch_size, ):
                raise ValueError(f'per-image sizes must have shape '
                                 f'({batch_size},), got {tuple(size.shape)}.')
            sides.append(size.to(device=device, dtype=torch.float32))
        else:
            sides.append(torch.full((batch_size, ), float(size),
                                    device=device))
    corner, extent = crop_corners(torch.stack(sides, 1), 1, scale, ratio,
                                  max_attempts, generator)
    return torch.cat([corner.flip(1), extent.flip(1)], 1).long()


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

    One ``torchvision.ops.roi_align`` call (``aligned=True``: pixel centres
    at half-integers, as PIL, OpenCV and ``grid_sample(align_corners=
    False)``; adaptive sampling: ``ceil(crop / output)`` bilinear samples
    per output pixel and axis are averaged, so shrinking antialiases and
    enlarging is plain bilinear). Outside the batch tensor, samples clamp to
    its border.

    Args:
        images: Float tensor of shape (N, C, H, W).
        corner: Tensor of shape (B, 2): each box's ``(left, top)``.
        extent: Tensor of shape (B, 2): each box's ``(width, height)``.
        size: Output ``(h, w)``.
        flip: Optional bool tensor of shape (B,) (or (B, 1, 1, 1)): mirror
            horizontally.
        image_index: Optional tensor of shape (B,): the image of each box
            (default: box ``b`` of image ``b mod N``, i.e. the view-major
            boxes of :func:`crop_corners`).

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


def resized_crop_flip(images: Tensor,
                      boxes: Tensor,
                      size: Sequence[int],
                      flip: Optional[Tensor] = None,
                      batch_index: Optional[Tensor] = None) -> Tensor:
    """:func:`crop_resize` of ``(top, left, h, w)`` boxes.

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
    if batch_index is None:
        batch_index = torch.arange(boxes.shape[0], device=images.device)
    return crop_resize(images, boxes[:, [1, 0]], boxes[:, [3, 2]], size,
                       flip, batch_index)


# ------------------------------------------------------------------ colour
def color_params(uniforms: Tensor,
                 brightness: float = 0.0,
                 contrast: float = 0.0,
                 saturation: float = 0.0,
                 hue: float = 0.0,
                 prob: float = 1.0) -> Dict[str, Any]:
    """Per-image parameters of :func:`color_jitter` from uniforms.

    As torchvision's and mmpretrain's ``ColorJitter`` inside a
    ``RandomApply(prob)``: brightness, contrast and saturation factors
    uniform in ``[max(0, 1 - s), 1 + s]``, hue uniform in ``[-hue, hue]``,
    the order of the four a uniform random permutation; per image.

    Args:
        uniforms: Tensor of shape (num, 9), uniform in [0, 1): whether to
            apply, the four factors, the keys of the order.
        brightness: Brightness strength, >= 0.
        contrast: Contrast strength, >= 0.
        saturation: Saturation strength, >= 0.
        hue: Hue strength in [0, 0.5] (a fraction of a turn).
        prob: Probability of jittering an image at all, in [0, 1].

    Returns:
        ``factors`` (num, 4) float (identity values where not applied),
        ``order`` (num, 4) long (a permutation of 0..3 per image: 0
        brightness, 1 contrast, 2 saturation, 3 hue), ``apply`` (num,)
        bool, and ``enabled``, a host-side tuple of four Python bools: the
        adjustments that can change an image at all (strength > 0 and
        ``prob`` > 0), so that :func:`color_jitter` skips the others
        without reading device values.
    """
    strengths = (check_number('brightness', brightness, 0.0),
                 check_number('contrast', contrast, 0.0),
                 check_number('saturation', saturation, 0.0))
    hue = check_number('hue', hue, 0.0, 0.5)
    prob = check_probability('prob', prob)
    device = uniforms.device
    lows = tuple(max(0.0, 1 - s) for s in strengths) + (-hue, )
    spans = tuple(1 + s - low for s, low in zip(strengths, lows)) + (2 * hue, )
    low = device_constant(('jitter low', lows), device, lambda: list(lows))
    span = device_constant(('jitter span', spans), device,
                           lambda: list(spans))
    neutral = device_constant('jitter neutral', device,
                              lambda: list(NEUTRAL_COLOR))
    apply = uniforms[:, 0] < prob
    factors = torch.where(apply.view(-1, 1),
                          torch.addcmul(low, uniforms[:, 1:5], span),
                          neutral)
    order = uniforms[:, 5:9].argsort(dim=1)
    enabled = tuple(prob > 0 and s > 0 for s in strengths + (hue, ))
    return dict(factors=factors, order=order, apply=apply, enabled=enabled)


def sample_color_params(num: int,
                        brightness: float = 0.0,
                        contrast: float = 0.0,
                        saturation: float = 0.0,
                        hue: float = 0.0,
                        prob: float = 1.0,
                        generator: Optional[torch.Generator] = None,
                        device: Optional[torch.device] = None
                        ) -> Dict[str, Any]:
    """:func:`color_params` of ``num`` images, drawn.

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
        See :func:`color_params`.
    """
    return color_params(
        torch.rand(num, 9, generator=generator, device=device), brightness,
        contrast, saturation, hue, prob)


#: Order codes: ``order[:, 0] * 64 + order[:, 1] * 16 + order[:, 2] * 4 +
#: order[:, 3]`` (the 24 permutations among 256 codes).
_CODE_WEIGHTS = (64, 16, 4, 1)
_IDENTITY = 4  # a blend slot that leaves an image unchanged


def _jitter_slots(enabled: Tuple[bool, ...]) -> Tuple[list, int]:
    """The blend of every slot for every order code: ``(table, blends)``,
    ``table[code][slot]`` in {0, 1, 2, 4} (4: identity). Without hue, one
    slot per enabled blend in the image's order; with hue, ``blends``
    slots before the hue step (the image's blends before its hue, then
    identities) and ``blends`` after it."""
    count = sum(enabled)
    hue = enabled[3]
    blends = count - 1 if hue else count
    table = []
    for code in range(256):
        order = [(code >> shift) & 3 for shift in (6, 4, 2, 0)]
        if sorted(order) != [0, 1, 2, 3]:
            table.append([_IDENTITY] * (2 * blends if hue else blends))
            continue
        seq = [op for op in order if enabled[op]]
        if not hue:
            table.append(seq)
            continue
        pos = seq.index(3)
        pre, post = seq[:pos], seq[pos + 1:]
        table.append(pre + [_IDENTITY] * (blends - len(pre)) + post +
                     [_IDENTITY] * (blends - len(post)))
    return table, blends


@functools.lru_cache(maxsize=None)
def _blend_tables(enabled: Tuple[bool, ...],
                  channels: int) -> Dict[str, Tensor]:
    """Host-side tables of :func:`color_jitter`'s blend slots.

    Each blend is ``x -> clamp(M x + C mean(x))`` with 3 x 3 (C x C)
    matrices affine in the image's factor ``f``: brightness ``M = f I``;
    contrast ``M = f I``, ``C = (1 - f) G``; saturation ``M = f I + (1 - f)
    G``; identity ``M = I``; ``G`` maps a colour to its grey on every
    channel (``G[c] = LUMA``; for C != 3, the mean over channels). So
    ``M = A + f B`` per slot and order code.

    Returns:
        ``column`` (slots, 256) long: the factor of each slot; ``a`` and
        ``b`` (slots, R, 256, C, C) float, R = 2 (M, C) if contrast is
        enabled else 1 (M).
    """
    table, _ = _jitter_slots(enabled)
    slots = len(table[0])
    eye = torch.eye(channels, dtype=torch.float64)
    grey = (torch.tensor(LUMA, dtype=torch.float64).expand(3, 3)
            if channels == 3 else torch.full((channels, channels),
                                             1.0 / channels,
                                             dtype=torch.float64))
    zero = torch.zeros_like(eye)
    #: kind -> ((A_M, B_M), (A_C, B_C))
    kinds = {0: ((zero, eye), (zero, zero)),
             1: ((zero, eye), (grey, -grey)),
             2: ((grey, eye - grey), (zero, zero)),
             _IDENTITY: ((eye, zero), (zero, zero))}
    parts = 2 if enabled[1] else 1
    a = torch.zeros(slots, parts, 256, channels, channels, dtype=torch.float64)
    b = torch.zeros_like(a)
    column = torch.zeros(slots, 256, dtype=torch.long)
    for code, row in enumerate(table):
        for slot, kind in enumerate(row):
            for part in range(parts):
                a[slot, part, code], b[slot, part, code] = kinds[kind][part]
            column[slot, code] = kind if kind != _IDENTITY else 0
    return dict(column=column, a=a.float(), b=b.float())


def rotate_hue(images: Tensor,
               turns: Tensor,
               pil: bool = False) -> Tensor:
    """Rotate the hue of RGB images in HSV, each image by its own amount
    (value and saturation kept).

    The HSV round trip in closed form: with ``V = max``, ``C = max - min``
    and the hue ``h`` in sextants, channel ``n`` (5 red, 3 green, 1 blue)
    is ``V - C * clamp(min(k, 4 - k), 0, 1)`` for ``k = (n + h') mod 6``,
    ``h'`` the rotated hue (same sextant tie-breaking as kornia and PIL:
    red, then green).

    ``pil=False``: torchvision's tensor ``adjust_hue`` (kornia's: ``h' = h +
    turns`` exactly). ``pil=True``: torchvision's ``adjust_hue`` of a PIL
    image (what official MSN's ``ColorJitter`` runs; mmcv's pillow backend
    is the same): the hue is stored in 8 bits, ``H = floor(255 h)`` (PIL's
    ``convert('HSV')`` truncates, 255 steps a turn), the rotation is
    ``trunc(255 turns)`` steps, added in ``uint8`` arithmetic (modulo 256,
    although the circle has 255 steps: a rotation across red loses a step,
    1/255 of a turn), and ``h' = H' / 255`` turns. Value and saturation
    stay floats here (PIL: 8 bits, saturation truncated, within a level).

    Args:
        images: Float tensor of shape (B, 3, ...) (any trailing dims), in
            any range.
        turns: Float tensor of shape (B,): the rotation, a fraction of a
            turn (hue factor of ``ColorJitter``).
        pil: Whether to rotate on PIL's 8-bit hue circle.

    Returns:
        Tensor of the shape of ``images``.
    """
    num = images.shape[0]
    view = (num, ) + (1, ) * (images.dim() - 1)
    top, arg = images.max(dim=1, keepdim=True)
    chroma = top - images.amin(dim=1, keepdim=True)
    # (g - b, b - r, r - g) / C of the largest channel (red, green, blue
    # first), plus 2 (green) or 4 (blue) sextants: in 255ths of a turn
    diff = images.roll(-1, 1) - images.roll(1, 1)
    sextant = diff.gather(1, arg) / chroma.clamp(min=1e-30)
    turns = turns.to(device=images.device, dtype=images.dtype)
    if pil:
        steps = torch.add(arg * 85, sextant, alpha=42.5)
        steps = torch.remainder(steps, 255.0).floor_()
        shift = torch.trunc(turns * 255.0).view(view)
        hue = torch.remainder(steps + shift, 256.0)  # uint8 wrap-around
        scale = 6.0 / 255.0
    else:
        hue = torch.add(arg * 2, sextant).add_(6.0 * turns.view(view))
        scale = 1.0
    channel = device_constant(('hue channels', images.dim()), images.device,
                              lambda: torch.tensor([5.0, 3.0, 1.0]).view(
                                  (1, 3) + (1, ) * (images.dim() - 2)),
                              images.dtype)
    k = torch.remainder(torch.add(channel, hue, alpha=scale), 6.0)
    ramp = torch.minimum(k, 4.0 - k).clamp_(0.0, 1.0)
    return torch.addcmul(top, chroma, ramp, value=-1.0)


def color_jitter(images: Tensor, params: Dict[str, Any]) -> Tensor:
    """Brightness, contrast, saturation and hue, in each image's order.

    Each image applies its four adjustments in its own ``order``
    (torchvision's ``ColorJitter`` formulas: brightness multiplies, contrast
    blends with the grey mean, saturation with the grey image, hue rotates
    on PIL's 8-bit hue circle, :func:`rotate_hue` with ``pil=True``), the
    result clipped to [0, 255] after every step, as the per-sample
    transforms do (they also round to 8 bits after each step, which this
    float path does not). Batched with a fixed sequence of ops (no host
    sync, nothing that grows with the batch): each blend is one batched
    colour matrix and grey-mean offset per image (``baddbmm``; the identity
    matrix where an image has no blend in a slot), looked up from the
    image's order in a table built once per device; the adjustments that
    ``params['enabled']`` rules out are dropped from every order; when hue
    is enabled, the slots of the blends before each image's hue step run
    first, then the hue rotation, then the slots after it. Images not
    jittered (``apply`` False) come back bit for bit.

    Args:
        images: Float tensor of shape (B, C, H, W) in [0, 255]; RGB (C = 3)
            for saturation and hue, any C for brightness and contrast.
        params: Output of :func:`color_params` for B images; without
            ``enabled``, every adjustment counts as enabled; without
            ``apply``, every image counts as jittered.

    Returns:
        Tensor of shape (B, C, H, W) in [0, 255].
    """
    factors, order = params['factors'], params['order']
    enabled = tuple(bool(e) for e in params.get('enabled', (True, ) * 4))
    if not any(enabled):
        return images
    num, channels = images.shape[:2]
    if channels != 3 and (enabled[2] or enabled[3]):
        raise ValueError('saturation and hue need RGB images (C = 3), got '
                         f'C = {channels}.')
    device, dtype = images.device, images.dtype
    key = ('jitter tables', enabled, channels)
    tables = {
        name: device_constant(
            key + (name, ), device,
            lambda name=name: _blend_tables(enabled, channels)[name],
            torch.long if name == 'column' else dtype)
        for name in ('column', 'a', 'b')
    }
    slots = tables['column'].shape[0]
    parts = tables['a'].shape[1]
    weights = device_constant('jitter order code', device,
                              lambda: list(_CODE_WEIGHTS), torch.long)
    code = (order.to(device) * weights).sum(dim=1)  # (B,)
    factors = factors.to(device=device, dtype=dtype)
    factor = factors.t().gather(0, tables['column'][:, code])  # (slots, B)
    mats = torch.addcmul(tables['a'][:, :, code],
                         factor.view(slots, 1, num, 1, 1),
                         tables['b'][:, :, code])
    mats = mats.view(slots * parts, num, channels, channels).unbind(0)
    x = images.reshape(num, channels, -1)
    source = x

    def blend(x: Tensor, slot: int) -> Tensor:
        mat = mats[slot * parts]
        if parts == 1:
            return torch.bmm(mat, x).clamp_(0.0, 255.0)
        offset = torch.bmm(mats[slot * parts + 1], x.mean(2, keepdim=True))
        return torch.baddbmm(offset, mat, x).clamp_(0.0, 255.0)

    if enabled[3]:
        for slot in range(slots // 2):
            x = blend(x, slot)
        x = rotate_hue(x, factors[:, 3], pil=True)
        for slot in range(slots // 2, slots):
            x = blend(x, slot)
    else:
        for slot in range(slots):
            x = blend(x, slot)
    apply = params.get('apply')
    if apply is not None:
        x = torch.where(apply.to(device).view(num, 1, 1), x, source)
    return x.view_as(images)


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


# -------------------------------------------------------------------- blur
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
    var3 = sigma * sigma  # 3 x the variance of one pass
    if passes != 3:
        var3 = var3 * (3.0 / passes)
    # l = floor((sqrt(12 var + 1) - 1) / 2)
    whole = torch.floor(torch.sqrt(var3 + 0.25) - 0.5)
    after = whole + 1
    # (2l + 1) (l (l + 1) - 3 var) / (6 (var - (l + 1)^2))
    num = (whole + after) * (whole * after - var3)
    den = torch.addcmul(var3 * 2.0, after, after, value=-6.0)
    return whole + num / den


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

    A pass along both axes with replicated borders is one 2-D convolution
    of the outer product of the box with itself after a 2-D replicate pad
    (clamping is separable), and PIL's horizontal and vertical passes
    commute, so the blur is ``passes`` grouped 2-D convolutions, one kernel
    per image (the channels of the batch as its batch). Every image runs
    through them (the unmasked ones with radius 0, the identity), so
    nothing waits on the mask.

    Args:
        images: Float tensor of shape (B, C, H, W).
        sigma: Float tensor of B values (e.g. shape (B,)), > 0.
        mask: Bool tensor of B values.
        max_sigma: The largest sigma that can be drawn (sets the kernel
            width, ``2 * floor(r(max_sigma)) + 3``).
        passes: Box passes per axis (PIL: 3).

    Returns:
        Tensor of shape (B, C, H, W).
    """
    passes = check_int('passes', passes, 1)
    num = images.shape[0]
    device, dtype = images.device, images.dtype
    var = max_sigma * max_sigma / passes
    half = math.floor((math.sqrt(12.0 * var + 1.0) - 1.0) / 2.0) + 1
    mask = mask.to(device).reshape(num, 1)
    sigma = sigma.to(device=device, dtype=dtype).reshape(num, 1)
    radius = box_blur_radius(sigma, passes) * mask  # unmasked: 0
    # |offset| - 1 for offsets -half..half: weight clamp(r + 1 - |d|, 0, 1)
    offset = device_constant(('blur offsets', half), device,
                             lambda: [abs(d) - 1.0
                                      for d in range(-half, half + 1)],
                             dtype)
    box = (radius - offset).clamp_(0.0, 1.0)
    box = box / box.sum(dim=1, keepdim=True)  # / (2 r + 1)
    width = 2 * half + 1
    kernel = box.view(num, 1, width, 1) * box.view(num, 1, 1, width)
    out = images.transpose(0, 1)  # (C, B, H, W): B channels, C a batch
    for _ in range(passes):
        out = F.conv2d(F.pad(out, (half, ) * 4, mode='replicate'), kernel,
                       groups=num)
    # images first: the result takes their (contiguous) layout
    return torch.where(~mask.view(num, 1, 1, 1), images, out.transpose(0, 1))


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
