"""The two upstream notes pmsn_mm silences: mmengine's FileClient notes only
when mmengine's own unused client logs them, mmcv-lite's import warning only
when message, category and module all match."""
import logging
import warnings

from mmengine.fileio import FileClient
from mmengine.logging import MMLogger
from mmengine.runner.checkpoint import save_checkpoint

from pmsn_mm.utils.upstream_notes import (MMEngineFileClientNotes,
                                          filter_upstream_import_warnings)


def _notes(tmp_path, action) -> list:
    logger = MMLogger.get_instance('file_client_notes')
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    notes = MMEngineFileClientNotes()
    logger.addFilter(notes)
    try:
        action()
    finally:
        logger.removeFilter(notes)
        logger.removeHandler(handler)
    return [r.getMessage().split(' will ')[0] for r in records]


def test_file_client_notes_dropped_only_for_mmengines_own_client(tmp_path):
    # mmengine's save_checkpoint builds an unused FileClient: silenced
    assert _notes(
        tmp_path,
        lambda: save_checkpoint({}, str(tmp_path / 'a.pth'))) == []
    # a FileClient asked for explicitly keeps its deprecation note
    assert _notes(
        tmp_path,
        lambda: FileClient.infer_client(dict(backend='disk'))) == [
            '"FileClient"'
        ]
    assert _notes(tmp_path, lambda: FileClient(backend='disk')) == [
        '"FileClient"'
    ]


def _shown(message: str, category: type, module: str) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter('always')
        filter_upstream_import_warnings()
        warnings.warn_explicit(message, category, 'f.py', 1, module=module)
    return len(caught) == 1


def test_the_mmcv_lite_warning_only_is_ignored():
    message = ('Fail to import ``MultiScaleDeformableAttention`` from '
               '``mmcv.ops.multi_scale_deform_attn``, You should install ...')
    module = 'mmcv.cnn.bricks.transformer'
    assert not _shown(message, UserWarning, module)
    assert _shown(message, DeprecationWarning, module)
    assert _shown(message, UserWarning, 'mmcv.cnn.bricks.transformer2')
    assert _shown('Fail to import ``Other``', UserWarning, module)
