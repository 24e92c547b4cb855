"""``ModuloHueColorJitter``: mmpretrain's ``ColorJitter`` with a hue step
that works under numpy >= 2.

mmcv 2.2's ``adjust_hue`` shifts the hue channel by ``np.uint8(hue_factor *
255)``, relying on the uint8 wrap-around of a negative value; numpy >= 2
refuses it (``OverflowError: Python integer -4 out of bounds for uint8``), so
every view that draws a negative hue crashes (about 40 % of the views of
MSN's ``hue=0.1``). :func:`adjust_hue` shifts the hue by ``trunc(hue_factor
* 255)`` modulo 256 in int arithmetic, which is what the wrap-around meant:
for the ``'pillow'`` backend this is torchvision's ``adjust_hue`` on a PIL
image, pixel for pixel, for negative and positive factors.

:class:`ModuloHueColorJitter` is registered under its own name; mmpretrain's
``ColorJitter`` stays as it is. pmsn_mm's configs name it in every pipeline
that jitters colour per sample (and restate the mmpretrain recipes they
inherit with it: SimCLR, SwAV, ...); any config opts in by its name. Its
parameters, random draws (numpy, in the same order) and the other three
adjustments are mmpretrain's.
"""
from typing import Dict

import cv2
import mmcv
import numpy as np
from mmpretrain.datasets.transforms import ColorJitter
from mmpretrain.registry import TRANSFORMS
from PIL import Image

from pmsn_mm.utils.validation import check_choice, check_number

HUE_BACKENDS = ('pillow', 'cv2')


def adjust_hue(img: np.ndarray,
               hue_factor: float,
               backend: str = 'pillow') -> np.ndarray:
    """Rotate the hue of a BGR uint8 image by ``hue_factor`` of a turn.

    Args:
        img: Array of shape (H, W, 3), BGR (mmcv's loading order), or
            (H, W) (returned unchanged: a grey image has no hue).
        hue_factor: Shift in [-0.5, 0.5]; -0.5 and 0.5 give the
            complementary colours, 0 the image itself.
        backend: ``'pillow'`` (PIL's HSV, as torchvision and mmcv's default)
            or ``'cv2'`` (OpenCV's full-range HSV).

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
    shift = int(hue_factor * 255)  # truncation towards zero, as torchvision
    if backend == 'pillow':
        rgb = Image.fromarray(np.ascontiguousarray(img[..., ::-1]), 'RGB')
        h, s, v = rgb.convert('HSV').split()
        hue = ((np.asarray(h, dtype=np.int16) + shift) % 256).astype(np.uint8)
        merged = Image.merge('HSV', (Image.fromarray(hue, 'L'), s, v))
        return np.asarray(merged.convert('RGB'))[..., ::-1].copy()
    hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV_FULL)
    hsv[..., 0] = (hsv[..., 0].astype(np.int16) + shift) % 256
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

    def transform(self, results: Dict) -> Dict:
        """Apply the four adjustments in the drawn order.

        The loop is mmpretrain's (kept here because it calls mmcv's
        ``adjust_hue`` inline).

        Args:
            results: Result dict with ``img``.
        """
        img = results['img']
        order, brightness, contrast, saturation, hue = self._rand_params()
        for index in order:
            if index == 0 and brightness is not None:
                img = mmcv.adjust_brightness(img, brightness,
                                             backend=self.backend)
            elif index == 1 and contrast is not None:
                img = mmcv.adjust_contrast(img, contrast,
                                           backend=self.backend)
            elif index == 2 and saturation is not None:
                img = mmcv.adjust_color(img, alpha=saturation,
                                        backend=self.backend)
            elif index == 3 and hue is not None:
                img = adjust_hue(img, hue, backend=self.backend)
        results['img'] = img
        return results
