"""The repository passes its pre-commit checks (.pre-commit-config.yaml):
flake8, isort and mypy with the settings of setup.cfg, no trailing
whitespace; and cites the paper's equations one way."""
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
    assert sorted(_hooks()) == ['flake8', 'isort', 'mypy',
                                'trailing-whitespace']


def test_flake8():
    out = _run('flake8', *FOLDERS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_isort():
    out = _run('isort', '--settings-path', 'setup.cfg', '--check-only',
               '--diff', *FOLDERS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy():
    """mypy over pmsn_mm/ (setup.cfg's [mypy]: ``files = pmsn_mm``)."""
    assert _hooks()['mypy']['entry'] == 'mypy'
    out = _run('mypy')
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'Success: no issues found' in out.stdout


#: The one citation form of the paper's equations.
CITATION = 'Assran et al., ICLR 2023, arXiv:2210.07277, eq. ('
#: The paper numbers its main-text equations (1) to (9) (eq. (9): PMSN).
PAPER_EQUATIONS = range(1, 10)


def _equation_mentions(text):
    """The ``eq. (...)`` mentions of a text, line breaks taken as spaces."""
    return re.findall(r'\beqs?\.\s+\(([^)]*)\)', text)


def test_equation_mentions_are_found():
    text = f'{CITATION}9)); eq.\n(msn_prior) and eq. (6)'
    assert _equation_mentions(text) == ['9', 'msn_prior', '6']


def test_every_file_that_implements_an_equation_cites_the_paper_one_way():
    """Every package file that names one of the paper's equations cites it
    in the one form at least once; every mention is a number the paper
    has (no LaTeX labels such as ``eq. (msn_prior)``)."""
    import glob
    uncited, wrong = [], []
    paths = glob.glob(osp.join(REPO, 'pmsn_mm', '**', '*.py'), recursive=True)
    for path in paths:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        mentions = _equation_mentions(text)
        if not mentions:
            continue
        if CITATION not in ' '.join(text.split()):
            uncited.append(osp.relpath(path, REPO))
        wrong += [f'{osp.relpath(path, REPO)}: eq. ({m})' for m in mentions
                  if not m.isdigit() or int(m) not in PAPER_EQUATIONS]
    assert uncited == [] and wrong == []


def test_docs_and_configs_cite_equations_by_number():
    import glob
    paths = [p for pattern in ('*.md', 'docs/*.md', 'configs/**/*.md',
                               'configs/**/*.py', 'configs/**/*.yaml')
             for p in glob.glob(osp.join(REPO, pattern), recursive=True)]
    assert len(paths) > 100
    wrong = []
    for path in paths:
        with open(path, encoding='utf-8') as f:
            wrong += [f'{osp.relpath(path, REPO)}: eq. ({m})'
                      for m in _equation_mentions(f.read())
                      if m != 'N'  # the form, in CONTRIBUTING/CHANGELOG
                      and (not m.isdigit() or int(m) not in PAPER_EQUATIONS)]
    assert wrong == []


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
