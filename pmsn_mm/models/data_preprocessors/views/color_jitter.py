"""Colour jitter of a view group on the device: brightness, contrast,
saturation and hue in a random order per view, applied with probability
``jitter_prob`` (settings and shared maths: ``pmsn_mm/views/color_jitter.py``).

Own code rather than kornia's functionals (the reference of the tests):
one batched colour matrix per step instead of ops per blend and view
(counts in CHANGELOG.md, 0.1.0), and the hue on PIL's 8-bit hue circle, as
official MSN's torchvision-on-PIL chain.
"""
import functools
from typing import Any, Callable, Dict, Tuple, cast

import torch
from torch import Tensor

from ....utils.validation import check_number, check_probability
from ....views.color_jitter import (ADJUSTMENTS, NEUTRAL_COLOR,
                                    ColorJitterSettings, jitter_range,
                                    rotate_hue_8bit)
from .base import ViewAugment, ViewDraws, device_constant

#: ITU-R 601 luma weights of (R, G, B): kornia's ``rgb_to_grayscale``,
#: PIL's ``convert('L')`` (there in 16-bit fixed point).
LUMA = (0.299, 0.587, 0.114)


def color_params(uniforms: Tensor,
                 brightness: float = 0.0,
                 contrast: float = 0.0,
                 saturation: float = 0.0,
                 hue: float = 0.0,
                 prob: float = 1.0) -> Dict[str, Any]:
    """Per-image parameters of :func:`color_jitter` from uniforms.

    As torchvision's ``ColorJitter`` in a ``RandomApply(prob)``: factors
    uniform in :func:`~pmsn_mm.views.color_jitter.jitter_range`, in a
    uniform random order, per image.

    Args:
        uniforms: Tensor of shape (num, 9), uniform in [0, 1): whether to
            apply, the four factors, the keys of the order.
        brightness: Brightness strength, >= 0.
        contrast: Contrast strength, >= 0.
        saturation: Saturation strength, >= 0.
        hue: Hue strength in [0, 0.5] (a fraction of a turn).
        prob: Probability of jittering an image at all, in [0, 1].

    Returns:
        ``factors`` (num, 4) float (identity where not applied), ``order``
        (num, 4) long (a permutation of the indices of
        :data:`~pmsn_mm.views.color_jitter.ADJUSTMENTS` per image),
        ``apply`` (num,) bool, and ``enabled``, four host-side bools: the
        adjustments that can change an image (skipped otherwise, without
        reading device values).
    """
    strengths = (check_number('brightness', brightness, 0.0),
                 check_number('contrast', contrast, 0.0),
                 check_number('saturation', saturation, 0.0))
    hue = check_number('hue', hue, 0.0, 0.5)
    prob = check_probability('prob', prob)
    device = uniforms.device
    ranges = [jitter_range(name, s)
              for name, s in zip(ADJUSTMENTS, strengths + (hue, ))]
    lows = tuple(low for low, _ in ranges)
    spans = tuple(high - low for low, high in ranges)
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

    Each blend is ``x -> clamp(M x + C mean(x))``, matrices affine in the
    factor ``f``: brightness ``M = f I``; contrast ``M = f I``, ``C = (1 -
    f) G``; saturation ``M = f I + (1 - f) G`` (``G[c] = LUMA``, the grey);
    so ``M = A + f B`` per slot and order code.

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

    The HSV round trip in closed form: with ``V = max``, ``C = max - min`` and
    the hue ``h`` in sextants, channel ``n`` (5 red, 3 green, 1 blue) is ``V -
    C * clamp(min(k, 4 - k), 0, 1)`` for ``k = (n + h') mod 6``, ``h'`` the
    rotated hue (same sextant tie-breaking as kornia and PIL: red, then green).

    ``pil=False``: torchvision's tensor ``adjust_hue`` (``h' = h + turns``).
    ``pil=True``: its ``adjust_hue`` of a PIL image (official MSN): the hue
    stored in 8 bits, ``H = floor(255 h)``, rotated by
    :func:`~pmsn_mm.views.color_jitter.rotate_hue_8bit`, ``h' = H' / 255``;
    value and saturation stay floats here (PIL: 8 bits).

    Args:
        images: Float tensor of shape (B, 3, ...), in any range.
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
        hue = rotate_hue_8bit(steps, turns.view(view), torch.trunc)
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

    torchvision's ``ColorJitter`` formulas in each image's own ``order`` (hue:
    :func:`rotate_hue` with ``pil=True``), clipped to [0, 255] after every
    step. No host sync: each blend is one batched colour matrix and offset
    per image (``baddbmm``); images not jittered come back bit for bit.

    Args:
        images: Float tensor of shape (B, C, H, W) in [0, 255]; RGB (C = 3)
            for saturation and hue, any C for brightness and contrast.
        params: :func:`color_params` of B images (without ``enabled`` /
            ``apply``: every adjustment enabled, every image jittered).

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
            # mypy cannot infer a lambda with a default in this context
            cast(Callable[[], Tensor],
                 lambda name=name: _blend_tables(enabled, channels)[name]),
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
    stacked = torch.addcmul(tables['a'][:, :, code],
                            factor.view(slots, 1, num, 1, 1),
                            tables['b'][:, :, code])
    mats = stacked.view(slots * parts, num, channels, channels).unbind(0)
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


class ColorJitterView(ColorJitterSettings, ViewAugment):
    """Colour jitter with probability ``jitter_prob``, in a random order per
    view (RGB views for saturation and hue). Random numbers: columns 0-8 of
    the shared draw (apply, the four factors, the keys of the order).
    """

    columns = tuple(range(9))

    def apply(self, images: Tensor, group: Dict[str, Any],
              draws: ViewDraws) -> Tensor:
        uniforms = cast(Tensor, draws.uniforms)  # drawn before apply
        params = color_params(uniforms[:, :9], group['brightness'],
                              group['contrast'], group['saturation'],
                              group['hue'], group['jitter_prob'])
        return color_jitter(images, params)
