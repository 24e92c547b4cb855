"""A local file backend whose writes are atomic (temp file + rename).

mmengine's ``LocalBackend.put`` writes into the checkpoint path, so a
process killed while saving leaves a truncated newest checkpoint.
:class:`AtomicLocalBackend` writes a hidden temporary file in the same
folder, flushes it and ``os.replace``-s it over the target: the path holds
the previous complete file or the new one, never a partial one.
Registered as ``'atomic_local'`` (``configs/_base_/default_runtime.py``'s
``CheckpointHook(backend_args=dict(backend='atomic_local'))``).
"""
import io
import os
import os.path as osp
import shutil
import uuid
from pathlib import Path
from typing import Any, Union

from mmengine.fileio import LocalBackend, register_backend
from mmengine.fileio.backends import backends as _registered_backends

BACKEND_NAME = 'atomic_local'


def atomic_write_bytes(data: bytes, filepath: Union[str, Path]) -> None:
    """Write ``data`` to ``filepath`` atomically.

    Via a hidden ``.<name>.<random>.tmp`` beside it, fsync'ed, then renamed
    (removed on an exception; after a kill it stays, hidden).

    Args:
        data: The bytes to write.
        filepath: Destination; its folder is created if needed.
    """
    filepath = os.fspath(filepath)
    folder = osp.dirname(osp.abspath(filepath))
    os.makedirs(folder, exist_ok=True)
    # open(..., 'xb') rather than mkstemp: the file gets the usual
    # permissions (umask), not mkstemp's 0600.
    tmp_path = osp.join(folder,
                        f'.{osp.basename(filepath)}.{uuid.uuid4().hex}.tmp')
    try:
        with open(tmp_path, 'xb') as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, filepath)
    except BaseException as error:
        if osp.exists(tmp_path):
            os.remove(tmp_path)
        if isinstance(error, OSError) and error.errno is not None:
            raise OSError(error.errno, write_error_message(
                error, filepath, len(data))) from error
        raise


def atomic_torch_save(obj: Any, filepath: Union[str, Path]) -> None:
    """``torch.save`` through :func:`atomic_write_bytes` (converters).

    Args:
        obj: What ``torch.save`` writes.
        filepath: Destination; its folder is created if needed.
    """
    import torch
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(buffer.getvalue(), filepath)


def write_error_message(error: OSError, filepath: str, size: int) -> str:
    """The message of a refused write (disk full, ...): file, size, free
    space, and that the previous file is unchanged.

    Args:
        error: The system's error.
        filepath: The destination.
        size: Bytes that were to be written.
    """
    folder = osp.dirname(osp.abspath(filepath))
    try:
        free = f'{shutil.disk_usage(folder).free / 2**20:.1f} MiB free'
    except OSError:
        free = 'free space unknown'
    return (f'{error.strerror or error}: could not write {filepath} '
            f'({size / 2**20:.1f} MiB; {free} in {folder}). Nothing was '
            'replaced: the previous file at that path, if any, is intact and '
            'no partial file was left.')


class AtomicLocalBackend(LocalBackend):
    """``LocalBackend`` with atomic :meth:`put` and :meth:`put_text`."""

    def put(self, obj: bytes, filepath: Union[str, Path]) -> None:
        """Write bytes to ``filepath`` atomically.

        Args:
            obj: Data to be written.
            filepath: Path to write data.
        """
        atomic_write_bytes(obj, filepath)

    def put_text(self,
                 obj: str,
                 filepath: Union[str, Path],
                 encoding: str = 'utf-8') -> None:
        """Write text to ``filepath`` atomically.

        Args:
            obj: Text to be written.
            filepath: Path to write text.
            encoding: Text encoding. Defaults to ``'utf-8'``.
        """
        atomic_write_bytes(obj.encode(encoding), filepath)


def register_atomic_backend() -> None:
    """Register :class:`AtomicLocalBackend` as ``'atomic_local'``.

    Idempotent; called when :mod:`pmsn_mm` is imported.
    """
    if _registered_backends.get(BACKEND_NAME) is not AtomicLocalBackend:
        register_backend(BACKEND_NAME, AtomicLocalBackend)
