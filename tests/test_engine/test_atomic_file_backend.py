"""Atomic writes: the target holds the old or the new file, never a part."""
import os
import stat

import pytest
import torch
from mmengine.fileio import get_file_backend
from mmengine.runner.checkpoint import save_checkpoint

from pmsn_mm.engine.atomic_file_backend import (AtomicLocalBackend,
                                                atomic_torch_save,
                                                atomic_write_bytes,
                                                register_atomic_backend)


def test_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / 'sub' / 'ckpt.pth'
    atomic_write_bytes(b'old', target)
    atomic_write_bytes(b'new', target)
    assert target.read_bytes() == b'new'
    assert os.listdir(tmp_path / 'sub') == ['ckpt.pth']


def test_torch_save_writes_whole_files_or_nothing(tmp_path):
    """What the model converters write: the saved object loads back; an
    object torch cannot save leaves the earlier file as it was."""
    target = tmp_path / 'out' / 'model.pth'
    atomic_torch_save({'w': torch.arange(3.0)}, target)
    assert torch.equal(torch.load(target, weights_only=True)['w'],
                       torch.arange(3.0))
    with pytest.raises(Exception):
        atomic_torch_save({'f': lambda: 0}, target)  # not picklable
    assert torch.equal(torch.load(target, weights_only=True)['w'],
                       torch.arange(3.0))
    assert os.listdir(tmp_path / 'out') == ['model.pth']


def test_permissions_are_those_of_a_normal_file(tmp_path):
    atomic_write_bytes(b'x', tmp_path / 'atomic')
    (tmp_path / 'plain').write_bytes(b'x')
    mode = [stat.S_IMODE(os.stat(tmp_path / n).st_mode)
            for n in ('atomic', 'plain')]
    assert mode[0] == mode[1]


def test_crash_before_the_rename_keeps_the_previous_file(tmp_path,
                                                         monkeypatch):
    target = tmp_path / 'ckpt.pth'
    torch.save(dict(step=1), target)

    def crash(src, dst):
        raise KeyboardInterrupt('killed while saving')

    monkeypatch.setattr(os, 'replace', crash)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(b'half a checkpoint', target)
    monkeypatch.undo()
    assert torch.load(target) == dict(step=1)
    assert os.listdir(tmp_path) == ['ckpt.pth']  # temporary removed


def test_mmengine_save_checkpoint_goes_through_the_backend(tmp_path,
                                                           monkeypatch):
    register_atomic_backend()  # idempotent
    args = dict(backend='atomic_local')
    assert isinstance(
        get_file_backend(str(tmp_path), backend_args=args), AtomicLocalBackend)
    written = []
    monkeypatch.setattr(
        AtomicLocalBackend, 'put',
        lambda self, obj, path: written.append(path) or atomic_write_bytes(
            obj, path))
    path = str(tmp_path / 'iter_1.pth')
    save_checkpoint(dict(state_dict=dict(w=torch.ones(2))), path,
                    backend_args=args)
    assert written == [path]
    assert torch.equal(torch.load(path)['state_dict']['w'], torch.ones(2))


def test_put_text(tmp_path):
    AtomicLocalBackend().put_text('iter_4.pth', tmp_path / 'last_checkpoint')
    assert (tmp_path / 'last_checkpoint').read_text() == 'iter_4.pth'
