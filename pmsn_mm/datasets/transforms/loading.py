"""``CheckedLoadImageFromFile``: mmcv's ``LoadImageFromFile`` whose failures
name the file and the cause.

mmcv decodes with OpenCV, which already gives correct RGB content for the
awkward files real datasets hold (grayscale and CMYK JPEGs, PNGs with alpha
or 16 bits per channel, EXIF-rotated JPEGs; tested against PIL). What it
does badly is fail: a truncated or non-image file ends in ``AssertionError:
failed to load image`` and an empty file in an OpenCV assertion that names
no file. :class:`CheckedLoadImageFromFile` raises :class:`ImageReadError`
naming the file, the sample index and the decoder's reason; datasets of
pmsn_mm add their type, ``data_root`` and split
(:class:`NamedReadErrorsMixin`). Decoded pixels are mmcv's, unchanged. It is
registered under its own name: mmcv's ``LoadImageFromFile`` stays as it is,
and pmsn_mm's configs name this one.
"""
import io
import math
from typing import List, Optional, Sequence, Tuple

import cv2
import mmcv
import numpy as np
from mmcv.transforms import LoadImageFromFile
from mmengine import fileio
from mmpretrain.registry import TRANSFORMS
from PIL import Image

from ...utils.refusal import Refusal
from ...views import check_view_groups, smallest_crops


class ImageReadError(Refusal, RuntimeError):
    """An image file of a dataset cannot be read or decoded (a refusal:
    the tools print its message alone)."""


def undecodable_reason(data: bytes) -> str:
    """Why image bytes do not decode, in PIL's words where it has them.

    Args:
        data: The file's bytes.
    """
    if not data:
        return 'the file is empty (0 bytes)'
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except Exception as e:  # PIL raises OSError, SyntaxError, ValueError
        return f'{type(e).__name__}: {e}'
    return 'OpenCV could not decode it (PIL could: an unusual format?)'


@TRANSFORMS.register_module()
class CheckedLoadImageFromFile(LoadImageFromFile):
    """Load an image (mmcv's ``LoadImageFromFile``; clear errors on
    unreadable files).

    **Required Keys:** img_path. **Added Keys:** img, img_shape, ori_shape.

    Args:
        to_float32: Return float32 instead of uint8.
        color_type: ``mmcv.imfrombytes`` flag. Defaults to ``'color'``
            (3 channels, BGR).
        imdecode_backend: ``'cv2'`` (default; correct for the awkward files
            above) or another ``mmcv.imfrombytes`` backend.
        file_client_args: Deprecated mmcv file client arguments.
        ignore_empty: Return None for a file that cannot be read (missing,
            a directory) or decoded instead of raising (mmengine then draws
            another sample in training, silently and uncounted; not
            recommended). mmcv's transform returns None where reading or
            decoding raises and fails its assertion where the decoder
            returns nothing (a non-image file); here both return None.
        backend_args: mmengine file backend arguments.
    """

    def _bytes(self, path: str) -> bytes:
        if self.file_client_args is not None:
            client = fileio.FileClient.infer_client(self.file_client_args,
                                                    path)
            return client.get(path)
        return fileio.get(path, backend_args=self.backend_args)

    def decode(self, data: bytes) -> Optional[np.ndarray]:
        """The image of the file's bytes, or None if they do not decode.

        Args:
            data: The file's bytes.
        """
        return mmcv.imfrombytes(data, flag=self.color_type,
                                backend=self.imdecode_backend)

    def transform(self, results: dict) -> Optional[dict]:
        """Read and decode ``results['img_path']``.

        Args:
            results: Data info of one sample.
        """
        path = results['img_path']
        where = f"{path} (sample {results.get('sample_idx', '?')})"
        try:
            data = self._bytes(path)
        except OSError as e:  # missing, a directory, no permission
            if self.ignore_empty:
                return None
            if isinstance(e, FileNotFoundError):
                raise FileNotFoundError(
                    f'Image file not found: {where}.') from e
            raise
        img, reason = None, None
        if data:
            try:
                img = self.decode(data)
            except Exception as e:  # decoders raise many types
                reason = f'{type(e).__name__}: {e}'
        if img is None:
            if self.ignore_empty:
                return None
            raise ImageReadError(
                f'Cannot decode image {where}: '
                f'{reason or undecodable_reason(data)}. The file is '
                'truncated, corrupt or not an image; replace or delete it '
                '(and drop it from the annotation file that lists it, if '
                'the dataset has one).')
        if self.to_float32:
            img = img.astype(np.float32)
        results['img'] = img
        results['img_shape'] = img.shape[:2]
        results['ori_shape'] = img.shape[:2]
        return results


#: OpenCV flags of JPEG decoding at 1/1, 1/2, 1/4, 1/8 (libjpeg DCT scaling;
#: EXIF orientation applied, as ``IMREAD_COLOR``).
_REDUCED_FLAGS = {1: 'IMREAD_COLOR', 2: 'IMREAD_REDUCED_COLOR_2',
                  4: 'IMREAD_REDUCED_COLOR_4', 8: 'IMREAD_REDUCED_COLOR_8'}


def largest_safe_reduction(height: int, width: int,
                           crops: Sequence[Tuple[float, float, int]]) -> int:
    """The largest factor in (1, 2, 4, 8) by which an image can shrink so
    that every random-resized crop still has both sides >= its output size.

    A crop of area fraction ``s`` and aspect ratio ``r`` has short side
    ``sqrt(s * H * W * min(r, 1 / r))``; its smallest value over a view
    group is at ``s = scale_min`` and the ratio farthest from 1.

    Args:
        height: Image height in pixels.
        width: Image width in pixels.
        crops: ``(scale_min, most extreme ratio, output size)`` per view
            group.

    Returns:
        1, 2, 4 or 8.
    """
    bound = min(
        math.sqrt(smin * height * width * min(ratio, 1 / ratio)) / size
        for smin, ratio, size in crops)
    return max([d for d in (1, 2, 4, 8) if d <= bound], default=1)


@TRANSFORMS.register_module()
class LoadImageForViews(CheckedLoadImageFromFile):
    """Decode an image for views drawn on the device: the loader's only work.

    :class:`CheckedLoadImageFromFile` (OpenCV, errors that name the file),
    except that a JPEG large enough is decoded at 1/2, 1/4 or 1/8 of its
    size in the DCT domain (cheaper to decode and to transfer) when every
    random resized crop of every view group still keeps both sides at or
    above its output resolution (:func:`largest_safe_reduction`; the header is
    read first). Pair it with ``PackInputs``, ``padded_collate`` and a
    ``BatchAugmentPreprocessor`` with the same ``views``.

    **Required Keys:** img_path. **Added Keys:** img (BGR uint8), img_shape,
    ori_shape (the decoded size).

    Args:
        views: The ``BatchAugmentPreprocessor`` view groups, checked as it
            checks them (``check_view_groups`` of
            :mod:`pmsn_mm.views`; ``scale``,
            ``ratio``, ``size`` are read; a group without ``size`` forbids
            any reduction). None: never reduce.
        **kwargs: :class:`CheckedLoadImageFromFile` arguments.
    """

    def __init__(self, views: Optional[Sequence[dict]] = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        if self.color_type != 'color' or self.imdecode_backend != 'cv2':
            raise ValueError(
                'LoadImageForViews decodes 3-channel colour with OpenCV: '
                f"color_type must be 'color' (got {self.color_type!r}) and "
                f"imdecode_backend 'cv2' (got {self.imdecode_backend!r}).")
        crops = smallest_crops(check_view_groups(views)) if views else None
        self.crops: List[Tuple[float, float, int]] = crops or []

    def _reduction(self, data: bytes) -> int:
        if not self.crops or data[:2] != b'\xff\xd8':  # not a JPEG
            return 1
        try:
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
        except Exception:  # undecodable: decode() reports it
            return 1
        return largest_safe_reduction(height, width, self.crops)

    def decode(self, data: bytes) -> Optional[np.ndarray]:
        """Decode at the largest safe reduction (OpenCV's reduced JPEG
        modes), or as :class:`CheckedLoadImageFromFile` does.

        Args:
            data: The file's bytes.
        """
        factor = self._reduction(data)
        if factor == 1:
            return super().decode(data)
        flag = getattr(cv2, _REDUCED_FLAGS[factor])
        return cv2.imdecode(np.frombuffer(data, np.uint8), flag)
