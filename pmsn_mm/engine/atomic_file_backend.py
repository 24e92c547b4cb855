"""A local file backend whose writes are atomic (temp file + rename).

mmengine's ``LocalBackend.put`` opens the checkpoint path and writes into
it, so a process killed while saving leaves a truncated newest checkpoint.
:class:`AtomicLocalBackend` writes to a hidden temporary file in the same
folder, flushes it to disk and renames it over the target
(``os.replace``, atomic on POSIX and Windows): the path holds either the
previous complete file or the new complete file, never a partial one.

Registered with mmengine's file-backend registry as ``'atomic_local'``;
``CheckpointHook(backend_args=dict(backend='atomic_local'))`` (set in
``configs/_base_/default_runtime.py``) saves checkpoints through it.
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

    The data goes to ``.<name>.<random>.tmp`` in the target folder, is
    flushed and fsync'ed, then renamed over ``filepath``. On an exception the
    temporary file is removed; after a kill it stays behind (hidden, never
    taken for a checkpoint).

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
    """``torch.save`` written with :func:`atomic_write_bytes`: ``filepath``
    holds the previous file or the whole new one, never a partial one (the
    model converters' outputs).

    Args:
        obj: What ``torch.save`` writes.
        filepath: Destination; its folder is created if needed.
    """
    import torch
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(buffer.getvalue(), filepath)


def write_error_message(error: OSError, filepath: str, size: int) -> str:
    """What :func:`atomic_write_bytes` says when the system refuses a write
    (disk full, quota, permissions): the file, the size, the free space,
    and that the previous file is unchanged.

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
    """``LocalBackend`` with atomic :meth:`put` and :meth:`put_text`.

    Reading, listing and removing are inherited unchanged.
    """

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
