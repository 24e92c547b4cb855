"""Install pmsn_mm: ``pip install -e .`` (add ``.[tests]`` for the tests)."""
import os.path as osp
from importlib import metadata

from setuptools import find_packages, setup

HERE = osp.dirname(osp.abspath(__file__))


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
    extras_require={'tests': read_requirements('requirements/tests.txt')},
    license='Apache-2.0',
    zip_safe=False,
)
