"""``CheckedLoadImageFromFile``: mmcv's ``LoadImageFromFile`` whose failures
name the file and the cause.

mmcv's OpenCV decoding gives correct RGB for the awkward files real
datasets hold (tested against PIL), but a truncated, non-image or empty
file fails with an assertion that names no file.
:class:`CheckedLoadImageFromFile` raises :class:`ImageReadError` naming the
file, the sample index and the decoder's reason (pmsn_mm's datasets add
their type, ``data_root`` and split); decoded pixels are mmcv's. Registered
under its own name: mmcv's ``LoadImageFromFile`` is unchanged.
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
    """mmcv's ``LoadImageFromFile`` with clear errors on unreadable files.

    **Required Keys:** img_path. **Added Keys:** img, img_shape, ori_shape.

    Args:
        to_float32: Return float32 instead of uint8.
        color_type: ``mmcv.imfrombytes`` flag. Defaults to ``'color'`` (BGR).
        imdecode_backend: ``'cv2'`` (default; correct for the awkward files
            above) or another ``mmcv.imfrombytes`` backend.
        file_client_args: Deprecated mmcv file client arguments.
        ignore_empty: Return None for an unreadable file instead of raising
            (mmengine silently draws another sample; not recommended).
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

    Args:
        height: Image height in pixels.
        width: Image width in pixels.
        crops: :func:`~pmsn_mm.views.crop.smallest_crops` of the groups.

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

    :class:`CheckedLoadImageFromFile`, except that a large enough JPEG is
    decoded at 1/2, 1/4 or 1/8 of its size in the DCT domain when every
    random resized crop still keeps both sides at or above its output size
    (:func:`largest_safe_reduction`). Pair it with ``PackInputs``,
    ``padded_collate`` and a ``BatchAugmentPreprocessor`` with the same
    ``views``.

    **Required Keys:** img_path. **Added Keys:** img (BGR uint8), img_shape,
    ori_shape (the decoded size).

    Args:
        views: The ``BatchAugmentPreprocessor`` view groups (a group
            without ``size`` forbids any reduction). None: never reduce.
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
