"""Gaussian blur of a view group on the device: with probability
``blur_prob``, each view with its own sigma uniform in ``blur_sigma``, as
PIL's ``ImageFilter.GaussianBlur`` (official MSN's and mmpretrain's blur;
its settings: ``pmsn_mm/views/blur.py``)."""
import math
from typing import Any, Dict, cast

import torch
import torch.nn.functional as F
from torch import Tensor

from ....utils.validation import check_int
from ....views.blur import BlurSettings
from .base import ViewAugment, ViewDraws, device_constant


def box_blur_radius(sigma: Tensor, passes: int = 3) -> Tensor:
    """Radius of the box blur that, applied ``passes`` times, has the
    variance of a Gaussian of std ``sigma``: PIL's ``_gaussian_blur_radius``
    (the extended box of Gwosdek et al., 2011).

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
    :func:`box_blur_radius` along each axis with replicated borders (a
    sampled Gaussian falls short of sigma ** 2 below ~0.5), each pass one
    grouped convolution; unmasked images run with radius 0 (no sync).

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


class GaussianBlurView(BlurSettings, ViewAugment):
    """Gaussian blur with probability ``blur_prob``, sigma uniform in
    ``blur_sigma`` (a (low, high) pair > 0). Random numbers: columns 11 (the
    coin) and 13 (the sigma) of the shared draw."""

    columns = (11, 13)
    coin_prob = 'blur_prob'

    def apply(self, images: Tensor, group: Dict[str, Any],
              draws: ViewDraws) -> Tensor:
        coin, column = self.columns
        low, high = group['blur_sigma']
        uniforms = cast(Tensor, draws.uniforms)  # drawn before apply
        sigma = uniforms[:, column] * (high - low) + low
        return gaussian_blur(images, sigma,
                             draws.coin(coin, group['blur_prob'],
                                        'blur coin'), high)
