import os

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
