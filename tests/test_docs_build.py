"""The documentation builds with no warning, with every page and every
registered pmsn_mm module in it.

The build is the one command that ``docs/index.md`` prints ("About these
docs"), run as printed except for its output folder (a temporary one) and
``-q -w FILE`` to keep the warnings; ``-W`` makes any warning (a broken link
or anchor, a malformed docstring, a page outside the table of contents, a
registered module that no section of ``docs/api.rst`` takes) an error.
Needs ``requirements/docs.txt`` (Sphinx, myst-parser, furo).
"""
import glob
import os.path as osp
import re
import shlex
import subprocess
import sys
import time
from typing import Dict, List

import pytest

from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

#: The pages the docs must have (issue 27): file name -> what it is.
PAGES = {
    'index': 'landing page',
    'get_started': 'getting started',
    'reproducing': 'reproducing the paper',
    'recipes': 'the recipe tables',
    'methods': 'how PMSN works',
    'choosing_a_prior': 'choosing a prior',
    'class_stratified': 'class-stratified batches',
    'evaluation': 'evaluation',
    'own_data': 'your own data',
    'backbones': 'backbones',
    'openmmlab': 'mim and the model index',
    'data': 'data formats',
    'distributed': 'distributed training',
    'toy_study': 'the toy study',
    'toy_prior_study': 'the toy study, run by run',
    'api': 'API reference',
}
#: ``@REGISTRY.register_module(...)`` on a class or function, in the source.
DECORATED = re.compile(
    r'^@(?P<registry>\w+)\.register_module\((?P<args>[^)]*)\)\s*\n'
    r'(?:@.*\n)*(?:class|def) (?P<name>\w+)', re.M)


def documented_build_command() -> List[str]:
    """The build command printed in docs/index.md, as an argv."""
    with open(osp.join(REPO, 'docs', 'index.md')) as f:
        text = f.read()
    commands = re.findall(r'^python -m sphinx .*$', text, re.M)
    assert len(commands) == 1, commands
    return shlex.split(commands[0])


@pytest.fixture(scope='module')
def built(tmp_path_factory) -> Dict[str, str]:
    """Build the docs once as documented, into a temporary folder."""
    try:
        import myst_parser  # noqa: F401
        import sphinx  # noqa: F401
    except ImportError as error:  # a clear failure, never a silent skip
        pytest.fail(f'{error}: pip install -r requirements/docs.txt')
    out = tmp_path_factory.mktemp('docs_html')
    warnings = out / 'warnings.txt'
    argv = documented_build_command()
    assert argv[:3] == ['python', '-m', 'sphinx'] and '-W' in argv, argv
    assert argv[-2] == 'docs', argv
    argv = [sys.executable] + argv[1:-1] + [
        str(out / 'html'), '-q', '-w', str(warnings)]
    start = time.time()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    seconds = time.time() - start
    print(f'docs build: {seconds:.1f} s')
    assert proc.returncode == 0, (
        f'the docs build failed (exit {proc.returncode}):\n'
        f'{warnings.read_text() if warnings.exists() else ""}\n'
        f'{proc.stderr[-5000:]}')
    assert warnings.read_text().strip() == ''
    return dict(html=str(out / 'html'))


def test_every_page_is_built(built):
    """Each page of the issue's list, every Markdown page of docs/ (a page
    outside every toctree is a warning), and the API index."""
    sources = {osp.splitext(osp.basename(p))[0]
               for p in glob.glob(osp.join(REPO, 'docs', '*.md'))}
    assert set(PAGES) - {'api'} <= sources, set(PAGES) - sources
    for page in sorted(set(PAGES) | sources):
        path = osp.join(built['html'], page + '.html')
        assert osp.isfile(path), f'{page} ({PAGES.get(page, "")}) not built'
        with open(path) as f:
            assert '<h1>' in f.read(), page
    assert osp.isfile(osp.join(built['html'], 'genindex.html'))


def registered_in_source() -> Dict[str, str]:
    """Every object a ``register_module`` decorator registers, found in the
    source text (independently of the docs extension's registry walk).

    Returns:
        ``{'pmsn_mm.module.Name': 'REGISTRY'}``.
    """
    found = {}
    for path in glob.glob(osp.join(REPO, 'pmsn_mm', '**', '*.py'),
                          recursive=True):
        with open(path) as f:
            text = f.read()
        module = osp.splitext(osp.relpath(path, REPO))[0].replace(
            osp.sep, '.')
        for match in DECORATED.finditer(text):
            found[f'{module}.{match.group("name")}'] = match.group(
                'registry')
    return found


def registered_at_runtime() -> Dict[str, str]:
    """Every object whose module is pmsn_mm's in any registry of mmengine's
    tree (roots and scoped children) after ``import pmsn_mm``.

    Returns:
        ``{'pmsn_mm.module.Name': registry name}``.
    """
    import mmengine.registry as registries

    import pmsn_mm  # noqa: F401
    found = {}
    stack = [r for r in vars(registries).values()
             if isinstance(r, registries.Registry)]
    while stack:
        registry = stack.pop()
        stack.extend(registry.children.values())
        for obj in registry.module_dict.values():
            if obj.__module__.startswith('pmsn_mm'):
                found[f'{obj.__module__}.{obj.__qualname__}'] = \
                    registry.name
    return found


def test_every_registered_module_is_in_the_api_reference(built):
    """Each registered class or function has its entry (an anchor named by
    its full path) and its ``type='...'`` line in api.html."""
    in_source = registered_in_source()
    at_runtime = registered_at_runtime()
    assert len(in_source) >= 50 and set(in_source) <= set(at_runtime), \
        set(in_source) - set(at_runtime)
    with open(osp.join(built['html'], 'api.html')) as f:
        api = f.read()
    missing = [name for name in sorted(at_runtime)
               if f'id="{name}"' not in api]
    assert not missing, f'registered but not in the API reference: {missing}'
    for name in ('PMSN', 'PowerLawPrior', 'ClassStratifiedBatchSampler',
                 'KNNAccuracy', 'FeatureTestLoop', 'padded_collate'):
        assert f"type='{name}'" in api, name
    # and the docstrings are rendered, Args included
    assert 'Parameters' in api or 'Args' in api
