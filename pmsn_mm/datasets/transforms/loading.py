"""mmcv's ``LoadImageFromFile`` whose failures name the file and the cause.

mmcv decodes with OpenCV, which already gives correct RGB content for the
awkward files real datasets hold (grayscale and CMYK JPEGs, PNGs with alpha
or 16 bits per channel, EXIF-rotated JPEGs; tested against PIL). What it
does badly is fail: a truncated or non-image file ends in ``AssertionError:
failed to load image`` and an empty file in an OpenCV assertion that names
no file. :class:`LoadImageFromFile` replaces mmpretrain's registered
``LoadImageFromFile`` when :mod:`pmsn_mm` is imported (so inherited
mmpretrain pipelines get it too) and raises :class:`ImageReadError` naming
the file, the sample index and the decoder's reason; datasets of pmsn_mm add
their type, ``data_root`` and split (:class:`NamedReadErrorsMixin`).
Decoded pixels are mmcv's, unchanged.
"""
import io
from typing import Optional

import mmcv
import numpy as np
from mmcv.transforms import LoadImageFromFile as _MMCVLoadImageFromFile
from mmengine import fileio
from mmpretrain.registry import TRANSFORMS
from PIL import Image


class ImageReadError(RuntimeError):
    """An image file of a dataset cannot be read or decoded."""


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


@TRANSFORMS.register_module(name='LoadImageFromFile', force=True)
class LoadImageFromFile(_MMCVLoadImageFromFile):
    """Load an image (mmcv's transform; clear errors on unreadable files).

    **Required Keys:** img_path. **Added Keys:** img, img_shape, ori_shape.

    Args:
        to_float32: Return float32 instead of uint8.
        color_type: ``mmcv.imfrombytes`` flag. Defaults to ``'color'``
            (3 channels, BGR).
        imdecode_backend: ``'cv2'`` (default; correct for the awkward files
            above) or another ``mmcv.imfrombytes`` backend.
        file_client_args: Deprecated mmcv file client arguments.
        ignore_empty: Return None for a missing or undecodable file instead
            of raising (mmengine then draws another sample in training,
            silently and uncounted; not recommended).
        backend_args: mmengine file backend arguments.
    """

    def _bytes(self, path: str) -> bytes:
        if self.file_client_args is not None:
            client = fileio.FileClient.infer_client(self.file_client_args,
                                                    path)
            return client.get(path)
        return fileio.get(path, backend_args=self.backend_args)

    def transform(self, results: dict) -> Optional[dict]:
        """Read and decode ``results['img_path']``.

        Args:
            results: Data info of one sample.
        """
        path = results['img_path']
        where = f"{path} (sample {results.get('sample_idx', '?')})"
        try:
            data = self._bytes(path)
        except FileNotFoundError as e:
            if self.ignore_empty:
                return None
            raise FileNotFoundError(f'Image file not found: {where}.') from e
        img, reason = None, None
        if data:
            try:
                img = mmcv.imfrombytes(
                    data, flag=self.color_type,
                    backend=self.imdecode_backend)
            except Exception as e:  # decoders raise many types
                reason = f'{type(e).__name__}: {e}'
        if img is None:
            if self.ignore_empty:
                return None
            raise ImageReadError(
                f'Cannot decode image {where}: '
                f'{reason or undecodable_reason(data)}. The file is '
                'truncated, corrupt or not an image; replace it, or remove '
                "it from the dataset's annotation files.")
        if self.to_float32:
            img = img.astype(np.float32)
        results['img'] = img
        results['img_shape'] = img.shape[:2]
        results['ori_shape'] = img.shape[:2]
        return results
