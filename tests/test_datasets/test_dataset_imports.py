"""pmsn_mm/datasets/ imports nothing from pmsn_mm/models/: loading data does
not pull in the models (the view settings that ``LoadImageForViews`` reads
live in pmsn_mm/views/)."""
import ast
import glob
import os.path as osp
from typing import List

import pytest

from tests._configs import REPO, modules_after_bare_import

DATASETS = osp.join(REPO, 'pmsn_mm', 'datasets')


def imported_modules(code: str, package: str) -> List[str]:
    """Absolute names of the modules a module's source imports (relative
    imports resolved against ``package``; ``from X import y`` counts as
    ``X`` and ``X.y``).

    Args:
        code: The module's source.
        package: Its package, e.g. ``'pmsn_mm.datasets.transforms'``.
    """
    names = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = package.split('.')
                parts = parts[:len(parts) - node.level + 1]
                base = '.'.join(parts + ([base] if base else []))
            names.append(base)
            names += [f'{base}.{alias.name}' for alias in node.names]
    return names


def _models(name: str) -> bool:
    return name == 'pmsn_mm.models' or name.startswith('pmsn_mm.models.')


def test_the_check_sees_every_way_to_import_models():
    code = ('from ...models.data_preprocessors import views\n'
            'from .. import samplers\n'
            'import pmsn_mm.models.heads\n'
            'def f():\n'
            '    from pmsn_mm import models\n')
    names = imported_modules(code, 'pmsn_mm.datasets.transforms')
    assert sorted(n for n in names if _models(n)) == [
        'pmsn_mm.models', 'pmsn_mm.models.data_preprocessors',
        'pmsn_mm.models.data_preprocessors.views', 'pmsn_mm.models.heads']
    assert 'pmsn_mm.datasets.samplers' in names
    # two dots from a module of pmsn_mm/datasets/ itself
    assert imported_modules('from ..models import heads\n',
                            'pmsn_mm.datasets') == [
                                'pmsn_mm.models', 'pmsn_mm.models.heads']


def test_no_datasets_module_imports_models():
    files = sorted(glob.glob(osp.join(DATASETS, '**', '*.py'),
                             recursive=True))
    assert len(files) > 20  # the walk finds the package
    offenders = {}
    for path in files:
        module = osp.relpath(path, REPO)[:-3].replace(osp.sep, '.')
        package = module.rsplit('.', 1)[0]  # of __init__ too
        with open(path) as f:
            names = imported_modules(f.read(), package)
        offenders[module] = [n for n in names if _models(n)]
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.slow  # a process that imports mmpretrain (~7 s of CPU)
def test_importing_the_datasets_loads_no_models():
    """``import pmsn_mm.datasets`` with ``pmsn_mm/__init__`` skipped (it
    registers every subpackage, models included): no pmsn_mm.models module
    is loaded."""
    loaded = modules_after_bare_import(
        'datasets', ('pmsn_mm.datasets.transforms.loading', 'pmsn_mm.models'))
    assert 'pmsn_mm.datasets.transforms.loading' in loaded
    assert [m for m in loaded if m.startswith('pmsn_mm.models')] == []
