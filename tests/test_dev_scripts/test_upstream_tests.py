""".dev_scripts/upstream_tests.py: upstream's tests at the installed tag,
plain and with pmsn_mm imported first; a test that passes plain and fails
with pmsn_mm is reported (here: a stand-in repository whose test fails when
pmsn_mm is imported)."""
import importlib.util
import os.path as osp
import subprocess
import textwrap
from importlib import metadata

import pytest

from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


def _script():
    spec = importlib.util.spec_from_file_location(
        'upstream_tests', osp.join(REPO, '.dev_scripts', 'upstream_tests.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stand_in_repository(path, tag: str) -> str:
    """A git repository whose ``tests/`` at ``tag`` has a test that fails
    with pmsn_mm imported, one that passes either way, one that fails
    either way and one that passes in mmengine's 'mmpretrain' scope."""
    tests = path / 'tests'
    tests.mkdir(parents=True)
    (tests / 'test_guest.py').write_text(textwrap.dedent('''
        import sys

        def test_nothing_imported_pmsn_mm():
            assert 'pmsn_mm' not in sys.modules

        def test_always():
            assert 1 + 1 == 2

        def test_never():
            assert 1 + 1 == 3

        def test_runs_in_the_mmpretrain_scope():
            from mmengine.registry import DefaultScope
            scope = DefaultScope.get_current_instance()
            assert scope is not None and scope.scope_name == 'mmpretrain'
    '''))
    git = ['git', '-C', str(path), '-c', 'user.name=t', '-c',
           'user.email=t@t']
    for cmd in (['init', '-q'], ['add', '.'], ['commit', '-q', '-m', 'x'],
                ['tag', tag]):
        subprocess.run(git + cmd, check=True)
    return str(path)


def test_a_test_broken_by_the_import_is_reported(tmp_path, monkeypatch,
                                                 capsys):
    script = _script()
    tag = f'v{metadata.version("mmengine")}'
    repo = _stand_in_repository(tmp_path / 'mmengine', tag)
    monkeypatch.setitem(script.SELECTED, 'mmengine', ['tests'])
    assert script.main(['--mmengine', repo]) == 1
    out = capsys.readouterr().out
    assert (f'mmengine {tag}, 1 test files, default scope mmpretrain: '
            'plain (3, 1, 0, 0) / with pmsn_mm (2, 2, 0, 0)') in out
    assert 'passes plain and fails with pmsn_mm: 1' in out
    assert 'test_guest::test_nothing_imported_pmsn_mm: failed' in out


def test_a_missing_tag_is_named(tmp_path, monkeypatch):
    script = _script()
    repo = _stand_in_repository(tmp_path / 'mmcv', 'v0.0.1')
    with pytest.raises(SystemExit, match='has no tag v'):
        script.main(['--mmcv', repo])


def test_compare_and_counts():
    script = _script()
    plain = {'a': 'passed', 'b': 'passed', 'c': 'failed', 'd': 'skipped'}
    ours = {'a': 'passed', 'b': 'failed', 'c': 'failed'}
    assert script.compare(plain, ours) == ['b']
    assert script.counts(plain) == (2, 1, 1, 0)
    # a file that crashes only with pmsn_mm, a test that is gone with it
    crashed = {'a': 'passed', 'tests/test_x.py': 'crashed'}
    assert script.compare({'a': 'passed', 'e': 'passed'}, crashed) == [
        'tests/test_x.py', 'e']
    assert script.counts(crashed) == (1, 0, 0, 1)
