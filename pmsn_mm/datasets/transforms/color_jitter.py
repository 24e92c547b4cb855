"""``ModuloHueColorJitter``: mmpretrain's ``ColorJitter`` with a hue step
that works under numpy >= 2 (mmcv 2.2's ``np.uint8(hue_factor * 255)`` of a
negative value raises ``OverflowError`` there). :func:`adjust_hue` shifts by
``trunc(hue_factor * 255)`` modulo 256, torchvision's ``adjust_hue`` pixel
for pixel with ``'pillow'``; draws and other adjustments are mmpretrain's,
ranges and hue rotation those of :mod:`pmsn_mm.views.color_jitter`.
"""
from typing import Any, Dict, Optional, Tuple

import cv2
import mmcv
import numpy as np
from mmpretrain.datasets.transforms import ColorJitter
from mmpretrain.registry import TRANSFORMS
from PIL import Image

from pmsn_mm.utils.validation import check_choice, check_number
from pmsn_mm.views.color_jitter import (ADJUSTMENTS, jitter_range,
                                        rotate_hue_8bit)

HUE_BACKENDS = ('pillow', 'cv2')


def adjust_hue(img: np.ndarray,
               hue_factor: float,
               backend: str = 'pillow') -> np.ndarray:
    """Rotate the hue of a BGR uint8 image by ``hue_factor`` of a turn.

    Args:
        img: Array of shape (H, W, 3), BGR (mmcv's loading order), or
            (H, W) (returned unchanged: a grey image has no hue).
        hue_factor: Shift in [-0.5, 0.5] (±0.5: complementary colours).
        backend: ``'pillow'`` (PIL's HSV, as torchvision) or ``'cv2'``
            (OpenCV's full-range HSV).

    Returns:
        Array of the shape and dtype of ``img``.
    """
    check_choice('ColorJitter backend', backend, HUE_BACKENDS)
    check_number('hue_factor', hue_factor, -0.5, 0.5)
    if img.ndim == 2:
        return img
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise TypeError('adjust_hue needs a uint8 array of shape (H, W, 3) '
                        f'or (H, W), got {img.dtype} {img.shape}.')
    if backend == 'pillow':
        rgb = Image.fromarray(np.ascontiguousarray(img[..., ::-1]), 'RGB')
        h, s, v = rgb.convert('HSV').split()
        hue = rotate_hue_8bit(np.asarray(h, dtype=np.int16),
                              hue_factor).astype(np.uint8)
        merged = Image.merge('HSV', (Image.fromarray(hue, 'L'), s, v))
        return np.asarray(merged.convert('RGB'))[..., ::-1].copy()
    hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV_FULL)
    hsv[..., 0] = rotate_hue_8bit(hsv[..., 0].astype(np.int16), hue_factor)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR_FULL)


@TRANSFORMS.register_module()
class ModuloHueColorJitter(ColorJitter):
    """Randomly change brightness, contrast, saturation and hue, in random
    order (mmpretrain's ``ColorJitter``; hue by :func:`adjust_hue`).

    **Required Keys:** img. **Modified Keys:** img.

    Args:
        brightness: Jitter of the brightness factor, drawn from
            ``[max(0, 1 - brightness), 1 + brightness]`` or ``(min, max)``.
        contrast: Jitter of the contrast factor, as ``brightness``.
        saturation: Jitter of the saturation factor, as ``brightness``.
        hue: Hue shift drawn from ``[-hue, hue]`` (0 <= hue <= 0.5) or
            ``(min, max)`` in [-0.5, 0.5].
        backend: ``'pillow'`` (default) or ``'cv2'``.
    """

    def __init__(self,
                 brightness=0.,
                 contrast=0.,
                 saturation=0.,
                 hue=0.,
                 backend: str = 'pillow') -> None:
        check_choice('ModuloHueColorJitter backend', backend,
                     HUE_BACKENDS)
        super().__init__(brightness, contrast, saturation, hue, backend)

    def _set_range(self,
                   value: Any,
                   name: str,
                   center: float = 1,
                   bound: Tuple[float, float] = (0, float('inf'))
                   ) -> Optional[Tuple[float, float]]:
        """mmpretrain's ``_set_range``, a single strength >= 0 first turned
        into ``jitter_range`` (mmpretrain's range, without its warning)."""
        if isinstance(value, (int, float)) and value >= 0:
            value = jitter_range(name, value)
        return super()._set_range(value, name, center, bound)

    def transform(self, results: Dict) -> Dict:
        """mmpretrain's loop over the four adjustments in the drawn order,
        with :func:`adjust_hue` for mmcv's.

        Args:
            results: Result dict with ``img``.
        """
        img = results['img']
        order, *factors = self._rand_params()
        backend = self.backend
        adjust = dict(
            brightness=lambda x, f: mmcv.adjust_brightness(
                x, f, backend=backend),
            contrast=lambda x, f: mmcv.adjust_contrast(x, f, backend=backend),
            saturation=lambda x, f: mmcv.adjust_color(x, f, backend=backend),
            hue=lambda x, f: adjust_hue(x, f, backend=backend))
        for index in order:
            if factors[index] is not None:
                img = adjust[ADJUSTMENTS[index]](img, factors[index])
        results['img'] = img
        return results
