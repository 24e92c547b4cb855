"""Silence three upstream notes that pmsn_mm users cannot act on, exactly.

- mmcv-lite's import warning about ``MultiScaleDeformableAttention``, a
  compiled op pmsn_mm never uses: :func:`filter_upstream_import_warnings`.
- mmengine 0.10's two ``FileClient`` deprecation notes from its own
  ``FileClient.infer_client(None, path)``: :class:`MMEngineFileClientNotes`.
- ``Runner.load_checkpoint``'s list of every unused key (~10 KB for a
  pretraining checkpoint), said in one line instead:
  :func:`unused_checkpoint_keys_unlisted`.

Nothing else is filtered.
"""
import contextlib
import logging
import sys
import warnings
from types import FrameType
from typing import Optional

#: The mmcv-lite import warning (regular expression, matched at the start).
MMCV_LITE_WARNING = (r'Fail to import ``MultiScaleDeformableAttention`` '
                     r'from ``mmcv\.ops\.multi_scale_deform_attn``')
#: Where mmcv issues it.
MMCV_LITE_WARNING_MODULE = r'mmcv\.cnn\.bricks\.transformer$'
#: Starts of the two notes logged by mmengine's FileClient.
FILE_CLIENT_NOTES = (
    '"FileClient" will be deprecated in future.',
    '"HardDiskBackend" is the alias of "LocalBackend" and the former will '
    'be deprecated in future.',
)


def filter_upstream_import_warnings() -> None:
    """Ignore mmcv-lite's ``MultiScaleDeformableAttention`` import warning
    (message, ``UserWarning`` and module all match; idempotent)."""
    warnings.filterwarnings(
        'ignore',
        message=MMCV_LITE_WARNING,
        category=UserWarning,
        module=MMCV_LITE_WARNING_MODULE)


def _from_mmengine_compatibility_client() -> bool:
    """Whether mmengine's own ``FileClient.infer_client(None, ...)`` call
    is on the stack (see the module docstring)."""
    from mmengine.fileio import FileClient
    code = FileClient.infer_client.__func__.__code__
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            caller = frame.f_back
            return (frame.f_locals.get('file_client_args') is None
                    and caller is not None and caller.f_globals.get(
                        '__name__', '').startswith('mmengine.'))
        frame = frame.f_back
    return False


class MMEngineFileClientNotes(logging.Filter):
    """Logging filter: drop mmengine's two ``FileClient`` deprecation notes
    (:data:`FILE_CLIENT_NOTES`) when mmengine's own unused compatibility
    client logs them; pass every other record.

    Add it to the runner's logger: ``runner.logger.addFilter(
    MMEngineFileClientNotes())`` (``tools/train.py`` does).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """False for the two notes of mmengine's compatibility client.

        Args:
            record: A log record.
        """
        if record.levelno != logging.WARNING:
            return True
        if not record.getMessage().startswith(FILE_CLIENT_NOTES):
            return True
        return not _from_mmengine_compatibility_client()


@contextlib.contextmanager
def unused_checkpoint_keys_unlisted():
    """Within the block, mmengine's runner loads checkpoints without
    printing the unmatched keys; use it only where the caller has reported
    what the checkpoint covers."""
    import functools

    import mmengine.runner.runner as runner_module
    load = runner_module._load_checkpoint_to_model
    runner_module._load_checkpoint_to_model = functools.partial(
        load, logger='silent')
    try:
        yield
    finally:
        runner_module._load_checkpoint_to_model = load
