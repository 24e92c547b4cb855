import os
import types

import pytest

# Tests run on CPU; keep thread pools small so the suite behaves on 2 cores.
os.environ.setdefault('OMP_NUM_THREADS', '1')

import pmsn_mm  # noqa: E402,F401  (registers every module)


def pytest_configure(config):
    # Third-party noise that says nothing about pmsn_mm.
    for pattern in (
            'ignore:Fail to import ``MultiScaleDeformableAttention``',
            'ignore::DeprecationWarning:mmpretrain.*',
            'ignore::DeprecationWarning:mmengine.*',
            'ignore:The given NumPy array is not writable',
    ):
        config.addinivalue_line('filterwarnings', pattern)


def pytest_collection_modifyitems(session, config, items):
    """The files marked ``slow`` first, each file's tests together in their
    order: with the workers of pytest-xdist (``--dist loadfile``) the long
    files start early and the short ones fill in, so no worker is left
    with a long file at the end."""
    slow = {item.path for item in items
            if item.get_closest_marker('slow') is not None}
    items.sort(key=lambda item: item.path not in slow)


@pytest.fixture(autouse=True, scope='session')
def fast_mmengine_bookkeeping():
    """Two costs of mmengine that say nothing about what a test checks,
    switched off for the whole session:

    - config dumps (``cfg.dump``, the runner's copy in the work dir and its
      log) skip yapf's layout pass: the same Python text, unformatted (yapf
      took ~70 % of a 2-iteration run);
    - building a dataset skips mmengine's explicit ``gc.collect()`` (up to
      a second each in a process that holds many runs; it frees memory
      only, and Python's collector still runs as usual).

    Runs in subprocesses (``tools/*.sh``, the crash tests) keep both.
    """
    import mmengine.config.config as mmengine_config
    import mmengine.dataset.base_dataset as mmengine_dataset
    patch = pytest.MonkeyPatch()
    patch.setattr(mmengine_config, 'FormatCode',
                  lambda text, **kwargs: (text, False))
    patch.setattr(mmengine_dataset, 'gc',
                  types.SimpleNamespace(collect=lambda: 0))
    yield
    patch.undo()
