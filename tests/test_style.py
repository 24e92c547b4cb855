"""The repository passes its pre-commit checks (.pre-commit-config.yaml):
flake8 and isort with the settings of setup.cfg, no trailing whitespace."""
import os.path as osp
import re
import subprocess
import sys

import pytest
import yaml

from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it
#: What the hooks check (python files of these folders).
FOLDERS = ('pmsn_mm', 'tools', 'tests', 'configs', '.dev_scripts')


def _hooks():
    with open(osp.join(REPO, '.pre-commit-config.yaml')) as f:
        config = yaml.safe_load(f)
    return {hook['id']: hook for repo in config['repos']
            for hook in repo['hooks']}


def _run(*args):
    return subprocess.run([sys.executable, '-m', *args], cwd=REPO,
                          capture_output=True, text=True)


def test_the_hooks_are_the_ones_checked_here():
    assert sorted(_hooks()) == ['flake8', 'isort', 'trailing-whitespace']


def test_flake8():
    out = _run('flake8', *FOLDERS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_isort():
    out = _run('isort', '--settings-path', 'setup.cfg', '--check-only',
               '--diff', *FOLDERS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_trailing_whitespace():
    import glob
    pattern = re.compile(_hooks()['trailing-whitespace']['entry'])
    paths = [p for folder in FOLDERS for p in glob.glob(
        osp.join(REPO, folder, '**', '*.py'), recursive=True)]
    assert len(paths) > 300
    hits = []
    for path in paths:
        with open(path, encoding='utf-8') as f:
            hits += [f'{osp.relpath(path, REPO)}:{n}'
                     for n, line in enumerate(f, 1)
                     if pattern.search(line.rstrip('\n'))]
    assert hits == []
