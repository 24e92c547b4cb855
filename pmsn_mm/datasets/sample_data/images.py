"""Decodable sample images: class-coded content and the awkward encodings
real datasets contain.

Content (:func:`class_image`): stripes whose colour and orientation encode
the class (random phase, frequency and noise), so that even an untrained
feature extractor separates the classes and a label permutation shows up
as chance accuracy. Encodings (:data:`KINDS`, :func:`write_image`,
:func:`truncate`): the file types a real image set mixes in;
:func:`expected_rgb` is what a correct loader returns, computed with PIL.
"""
import io
import os
import os.path as osp
from typing import Tuple, cast

import cv2
import numpy as np
from PIL import Image, ImageOps

from ...utils.validation import check_choice, check_number

#: Encodings :func:`write_image` writes (the file's extension is the
#: caller's; ``png_as_jpeg`` is meant for a ``.JPEG`` name).
KINDS = ('rgb_jpeg', 'gray_jpeg', 'cmyk_jpeg', 'exif_rotated_jpeg',
         'progressive_jpeg', 'png_as_jpeg', 'rgba_png', 'gray16_png',
         'rgb16_png', 'rgb_png', 'palette_png', 'gray_alpha_png')
#: EXIF orientation 6: the stored pixels are shown turned 90° clockwise.
EXIF_ORIENTATION_TAG = 0x0112


def class_image(label: int, num_classes: int, height: int, width: int,
                rng: np.random.Generator) -> np.ndarray:
    """An RGB image whose colour and stripe angle encode ``label``.

    Args:
        label: Class index in ``[0, num_classes)``.
        num_classes: Number of classes (sets the hue and angle steps).
        height: Image height in pixels.
        width: Image width in pixels.
        rng: Source of the per-image phase, frequency and noise.

    Returns:
        uint8 array of shape (height, width, 3).
    """
    hue = (label % num_classes) / num_classes
    angle = np.pi * ((label * 7) % num_classes) / num_classes
    # numpy's stubs type np.uint8(a nested list) a scalar, not an array
    hsv = cast(np.ndarray, np.uint8(
        [[[int(hue * 179), 170, 210]]]))  # type: ignore[arg-type]  # stubs
    colour = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0, 0].astype(np.float32)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    period = rng.uniform(6.0, 14.0) * max(height, width) / 64
    wave = np.sin(2 * np.pi * (xx * np.cos(angle) + yy * np.sin(angle)) /
                  period + rng.uniform(0, 2 * np.pi))
    img = colour * (0.65 + 0.35 * wave)[..., None]
    img += rng.normal(0, 8, size=img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def write_image(path: str, rgb: np.ndarray, kind: str = 'rgb_jpeg',
                quality: int = 90) -> None:
    """Encode ``rgb`` as ``kind`` into ``path`` (folders are created).

    Args:
        path: Output file.
        rgb: uint8 array of shape (H, W, 3).
        kind: One of :data:`KINDS`.
        quality: JPEG quality.
    """
    check_choice('kind', kind, KINDS)
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    image = Image.fromarray(rgb, 'RGB')
    if kind == 'rgb_jpeg':
        image.save(path, 'JPEG', quality=quality)
    elif kind == 'progressive_jpeg':
        image.save(path, 'JPEG', quality=quality, progressive=True)
    elif kind == 'gray_jpeg':
        image.convert('L').save(path, 'JPEG', quality=quality)
    elif kind == 'cmyk_jpeg':
        image.convert('CMYK').save(path, 'JPEG', quality=quality)
    elif kind == 'exif_rotated_jpeg':
        exif = Image.Exif()
        exif[EXIF_ORIENTATION_TAG] = 6
        # stored turned 90° anticlockwise; orientation 6 turns it back
        Image.fromarray(np.ascontiguousarray(np.rot90(rgb))).save(
            path, 'JPEG', quality=quality, exif=exif.tobytes())
    elif kind in ('png_as_jpeg', 'rgb_png'):
        image.save(path, 'PNG')
    elif kind == 'palette_png':
        image.quantize(64).save(path, 'PNG')
    elif kind == 'gray_alpha_png':
        image.convert('LA').save(path, 'PNG')
    elif kind == 'rgba_png':
        alpha = np.linspace(0, 255, rgb.shape[1], dtype=np.uint8)
        rgba = np.dstack([rgb, np.broadcast_to(alpha, rgb.shape[:2])])
        Image.fromarray(rgba, 'RGBA').save(path, 'PNG')
    elif kind == 'gray16_png':
        grey = np.asarray(image.convert('L'), dtype=np.uint16)
        # a low byte >= 128, so rounding instead of v >> 8 would show
        Image.fromarray(grey * 256 + 200).save(path, 'PNG')
    else:  # rgb16_png: PIL writes no 16-bit RGB, OpenCV does (BGR order)
        deep = rgb[..., ::-1].astype(np.uint16) * 257
        ok, data = cv2.imencode('.png', np.ascontiguousarray(deep))
        if not ok:
            raise OSError(f'OpenCV could not encode a 16-bit PNG for {path}')
        with open(path, 'wb') as f:
            f.write(data.tobytes())


def truncate(path: str, keep: float = 0.5) -> None:
    """Cut a file to the first ``keep`` fraction of its bytes (a download
    that stopped half-way).

    Args:
        path: The file, rewritten in place.
        keep: Fraction of the bytes kept, in (0, 1).
    """
    check_number('keep', keep, 0, 1, low_open=True, high_open=True)
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:int(len(data) * keep)])


def expected_rgb(path: str) -> np.ndarray:
    """The RGB content a loader should give for ``path``, by PIL alone.

    EXIF orientation applied, alpha dropped, 16-bit samples by their high
    byte (PIL's own ``convert`` clips them at 255).

    Args:
        path: An image file.

    Returns:
        uint8 array of shape (H, W, 3).
    """
    with open(path, 'rb') as f:
        image: Image.Image = Image.open(io.BytesIO(f.read()))
        image = ImageOps.exif_transpose(image)
    if image.mode.startswith('I;16') or image.mode == 'I':
        grey = (np.asarray(image).astype(np.uint32) >> 8).astype(np.uint8)
        return np.repeat(grey[..., None], 3, axis=2)
    return np.asarray(image.convert('RGB'))


def image_size(rng: np.random.Generator, low: int, high: int,
               aspect: Tuple[float, float] = (0.6, 1.0)) -> Tuple[int, int]:
    """A random ``(height, width)``: the long side in ``[low, high]``.

    Args:
        rng: Source of randomness.
        low: Smallest long side.
        high: Largest long side.
        aspect: Range of short/long side ratios.
    """
    long_side = int(rng.integers(low, high + 1))
    short = max(1, int(round(long_side * rng.uniform(*aspect))))
    return (short, long_side) if rng.random() < 0.7 else (long_side, short)
