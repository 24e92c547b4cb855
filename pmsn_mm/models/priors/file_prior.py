"""Cluster prior read from a file."""
import json
import os
import os.path as osp
from typing import Union

import numpy as np
from mmpretrain.registry import MODELS

from .base_prior import BasePrior

FILE_PRIOR_EXTENSIONS = ('.npy', '.json', '.txt')
_TEXT_FORMATS = {
    '.json': 'a list of numbers, or an object with key "prior" or "counts" '
    'holding one',
    '.txt': 'numbers separated by whitespace',
}


def load_prior_file(path: str) -> np.ndarray:
    """Read prior weights or counts from ``path``.

    Formats, chosen by extension:

    - ``.npy``: a 1-D numpy array.
    - ``.json``: a list of numbers, or an object with key ``"prior"`` or
      ``"counts"`` (exactly one) holding such a list.
    - ``.txt``: numbers separated by whitespace and/or newlines.

    Args:
        path: File path.

    Returns:
        np.ndarray of shape (K,), float64, not yet validated.

    Raises:
        ValueError: If the extension is not one of
            :data:`FILE_PRIOR_EXTENSIONS` or the file is not of that format,
            naming the path and the format.
        FileNotFoundError: If ``path`` does not exist.
    """
    ext = osp.splitext(path)[1].lower()
    if ext not in FILE_PRIOR_EXTENSIONS:
        raise ValueError(f'FilePrior path must end with one of '
                         f'{FILE_PRIOR_EXTENSIONS}, but is {path!r}.')
    if not osp.isfile(path):
        raise FileNotFoundError(f'FilePrior path {path!r} does not exist.')
    if ext == '.npy':
        try:
            return np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:
            raise ValueError(
                f'FilePrior {path!r} is not a readable .npy file (expected '
                'a 1-D numeric array written by numpy.save, no pickled '
                f'objects): {err}') from err
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except UnicodeDecodeError as err:
        raise ValueError(
            f'FilePrior {path!r} is not a UTF-8 text file (expected '
            f'{_TEXT_FORMATS[ext]}): {err}') from err
    if ext == '.txt':
        try:
            return np.array([float(t) for t in text.split()],
                            dtype=np.float64)
        except ValueError as err:
            raise ValueError(f'FilePrior {path!r} must hold numbers separated '
                             f'by whitespace: {err}') from err
    try:
        content = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(
            f'FilePrior {path!r} is not valid JSON (expected '
            f'{_TEXT_FORMATS[ext]}): {err}') from err
    if isinstance(content, dict):
        keys = [k for k in ('prior', 'counts') if k in content]
        if len(keys) != 1:
            raise ValueError(
                f'FilePrior JSON object {path!r} must have exactly one of the '
                f'keys "prior" and "counts", but has {sorted(content)}.')
        content = content[keys[0]]
    if not isinstance(content, list):
        raise ValueError(f'FilePrior JSON {path!r} must hold a list of '
                         f'numbers, but holds {type(content).__name__}.')
    try:
        return np.asarray(content, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f'FilePrior JSON {path!r} must hold a list of '
                         f'numbers: {err}') from err


@MODELS.register_module()
class FilePrior(BasePrior):
    """Prior read from a ``.npy``, ``.json`` or ``.txt`` file, normalised.

    Formats: :func:`load_prior_file`. Probabilities or counts, validated
    (finite, > 0) and normalised, never clamped.

    Args:
        num_prototypes: K, given by the head; the file must hold K values.
        path: Path of the file.
    """

    def __init__(self, num_prototypes: int,
                 path: Union[str, os.PathLike]) -> None:
        path = str(path)
        super().__init__(num_prototypes, load_prior_file(path),
                         f'FilePrior {path!r}')
        self.path = path

    def extra_repr(self) -> str:
        return f'num_prototypes={self.num_prototypes}, path={self.path!r}'
