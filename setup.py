"""Install pmsn_mm: ``pip install -e .`` (add ``.[tests]`` for the tests).

A built package (``pip install .``, ``pip wheel .``, ``python -m build``)
also carries ``configs/``, ``tools/`` and ``model-index.yml`` in
``pmsn_mm/.mim/``, where OpenMMLab's ``mim`` looks for them
(``mim train pmsn_mm CONFIG``, ``mim test``, ``mim run``; docs/openmmlab.md).
"""
import os.path as osp
import shutil
from importlib import metadata

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = osp.dirname(osp.abspath(__file__))
#: Copied into ``pmsn_mm/.mim`` of a built package (MANIFEST.in puts them in
#: the sdist, so a wheel built from the sdist has them too).
MIM_FILES = ('configs', 'tools', 'model-index.yml')


def read_requirements(path: str) -> list:
    """Requirement lines of ``path`` without comments."""
    with open(osp.join(HERE, path)) as f:
        lines = (line.split('#')[0].strip() for line in f)
        return [line for line in lines if line]


def choose_mmcv(requirements: list) -> list:
    """Keep an installed full ``mmcv`` instead of adding ``mmcv-lite``."""
    try:
        metadata.version('mmcv')
    except metadata.PackageNotFoundError:
        return requirements
    return [
        r.replace('mmcv-lite', 'mmcv') if r.startswith('mmcv-lite') else r
        for r in requirements
    ]


def read_version() -> str:
    scope: dict = {}
    with open(osp.join(HERE, 'pmsn_mm', 'version.py')) as f:
        exec(f.read(), scope)
    return scope['__version__']


class BuildPyWithMim(build_py):
    """``build_py`` that also copies :data:`MIM_FILES` into the built
    package's ``.mim`` folder.

    An editable install (PEP 660) builds nothing: its package is the
    checkout, and :mod:`pmsn_mm.utils.model_index` reads the index from the
    repository root (``mim`` itself cannot locate an editable package, see
    docs/openmmlab.md).
    """

    def run(self) -> None:
        super().run()
        if getattr(self, 'editable_mode', False):
            return
        target = osp.join(self.build_lib, 'pmsn_mm', '.mim')
        skip = shutil.ignore_patterns('__pycache__', '*.pyc')
        for name in MIM_FILES:
            src, dst = osp.join(HERE, name), osp.join(target, name)
            if not osp.exists(src):
                raise FileNotFoundError(
                    f'{src} is missing: a pmsn_mm package needs it in .mim '
                    f'({", ".join(MIM_FILES)}); build from a full checkout '
                    'or its sdist.')
            if osp.isdir(dst):
                shutil.rmtree(dst)
            if osp.isdir(src):
                shutil.copytree(src, dst, ignore=skip)
            else:
                self.mkpath(target)
                shutil.copyfile(src, dst)


setup(
    name='pmsn_mm',
    version=read_version(),
    description='Prior Matching for Siamese Networks (PMSN) and the hidden '
    'uniform cluster prior of SSL, on mmengine/mmpretrain',
    long_description=open(osp.join(HERE, 'README.md')).read(),
    long_description_content_type='text/markdown',
    packages=find_packages(include=['pmsn_mm', 'pmsn_mm.*']),
    python_requires='>=3.9',
    install_requires=choose_mmcv(read_requirements('requirements.txt')),
    # the tests build the documentation (tests/test_docs_build.py)
    extras_require={
        'tests': read_requirements('requirements/tests.txt') +
        read_requirements('requirements/docs.txt'),
        'docs': read_requirements('requirements/docs.txt'),
    },
    license='Apache-2.0',
    zip_safe=False,
    cmdclass={'build_py': BuildPyWithMim},
)
