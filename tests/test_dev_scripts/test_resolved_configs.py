""".dev_scripts/resolved_configs.py: the differences of two resolved
configs, with the allowed renames, ignored and added keys."""
import importlib.util
import json
import os.path as osp

from tests._configs import REPO


def _script():
    spec = importlib.util.spec_from_file_location(
        'resolved_configs',
        osp.join(REPO, '.dev_scripts', 'resolved_configs.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BEFORE = dict(model=dict(type='SimCLR', _scope_='mmpretrain', depth=50),
              optim_wrapper=dict(optimizer=dict(type='LARS', lr=0.3)),
              train_dataloader=dict(batch_size=4))
AFTER = dict(
    model=dict(type='SyncFreeSimCLR', depth=50),
    optim_wrapper=dict(optimizer=dict(type='SyncFreeLARS', lr=0.3),
                       constructor='CoalescedOptimWrapperConstructor'),
    train_dataloader=dict(batch_size=4, pin_memory=True))


def _write(folder, data):
    folder.mkdir()
    (folder / 'a.py.json').write_text(json.dumps(data))
    return str(folder)


def test_only_the_allowed_changes_pass(tmp_path, capsys):
    script = _script()
    before = _write(tmp_path / 'before', BEFORE)
    after = _write(tmp_path / 'after', AFTER)
    allowed = ['--rename', 'SimCLR=SyncFreeSimCLR', '--rename',
               'LARS=SyncFreeLARS', '--ignore-key', '_scope_', '--added',
               'constructor', '--added', 'pin_memory']
    assert script.main(['compare', before, after, *allowed]) == 0
    assert '1 configs compared, 0 differ' in capsys.readouterr().out
    assert script.main(['compare', before, after, *allowed[:-2]]) == 1
    out = capsys.readouterr().out
    assert 'train_dataloader.pin_memory: added True' in out
    assert script.main(['compare', before, after]) == 1
    out = capsys.readouterr().out
    assert "model.type: 'SimCLR' -> 'SyncFreeSimCLR'" in out
    assert 'model._scope_: removed' in out


def test_lists_and_removed_keys():
    script = _script()
    lines = list(script.differences(dict(a=[1, dict(b=2)], c=3),
                                    dict(a=[1, dict(b=5)]), set()))
    assert lines == ['a[1].b: 2 -> 5', 'c: removed']
