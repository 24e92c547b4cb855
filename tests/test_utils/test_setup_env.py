"""``import pmsn_mm``'s setup, one function: every step has happened, the
warning filter runs before mmcv is imported, and a second call changes
nothing."""
import inspect
import os.path as osp
import subprocess
import sys

import pytest
import torch
from mmengine.fileio.backends import backends
from mmengine.logging import HistoryBuffer
from mmengine.registry import Registry
from mmpretrain import registry as mmpretrain_registry
from mmpretrain.apis.model import ModelHub

import pmsn_mm
from pmsn_mm.engine.atomic_file_backend import AtomicLocalBackend
from pmsn_mm.models.priors import UniformPrior
from pmsn_mm.utils.setup_env import register_all_modules

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
MMCV_LITE = 'Fail to import ``MultiScaleDeformableAttention``'


def _pmsn_classes() -> list:
    return [
        cls for registry in vars(mmpretrain_registry).values()
        if isinstance(registry, Registry)
        for cls in registry.module_dict.values()
        if isinstance(cls, type) and cls.__module__.startswith('pmsn_mm.')
    ]


def test_every_step_has_happened():
    # checkpoint globals, atomic backend, registration, model index
    assert HistoryBuffer in torch.serialization.get_safe_globals()
    assert backends['atomic_local'] is AtomicLocalBackend
    assert 'UniformPrior' in mmpretrain_registry.MODELS.module_dict
    assert any(name.startswith('pmsn_') for name in ModelHub._models_dict)
    # no class is changed: __init__ is the constructor written in the
    # class's own file (config keys are checked from the signatures)
    init = UniformPrior.__init__
    assert init.__qualname__ == 'UniformPrior.__init__'
    assert not hasattr(init, '__wrapped__')
    assert inspect.getsourcefile(init) == inspect.getsourcefile(UniformPrior)
    with pytest.raises(TypeError,
                       match="unexpected keyword argument 'num_prototype'"):
        UniformPrior(num_prototype=4)
    assert UniformPrior(num_prototypes=4).num_prototypes == 4
    assert pmsn_mm.register_all_modules is register_all_modules


def test_a_second_call_changes_nothing():
    classes = _pmsn_classes()
    assert len(classes) > 50
    inits = [cls.__init__ for cls in classes]
    models = dict(ModelHub._models_dict)
    register_all_modules()
    assert [cls.__init__ for cls in classes] == inits
    assert ModelHub._models_dict == models


@pytest.mark.slow
def test_the_mmcv_lite_warning_is_filtered_before_mmcv_is_imported():
    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, '-W', 'error::UserWarning', '-c', code],
            cwd=REPO, capture_output=True, text=True, timeout=300)

    # at the first import of mmcv the filter is already in place (whatever
    # mmcv is installed)
    order = run(
        'import builtins, warnings\n'
        'seen = {}\n'
        'real = builtins.__import__\n'
        'def imp(name, *a, **k):\n'
        '    if name.split(".")[0] == "mmcv" and "mmcv" not in seen:\n'
        '        seen["mmcv"] = any(f[1] is not None and\n'
        '                           "MultiScaleDeform" in f[1].pattern\n'
        '                           for f in warnings.filters)\n'
        '    return real(name, *a, **k)\n'
        'builtins.__import__ = imp\n'
        'import pmsn_mm\n'
        'assert seen == {"mmcv": True}, seen\n')
    assert order.returncode == 0, order.stderr[-2000:]
    # with mmcv-lite (this project's install) the warning is real and gone
    unfiltered = run('import mmpretrain.models')
    if unfiltered.returncode != 0:
        assert MMCV_LITE in unfiltered.stderr, unfiltered.stderr[-2000:]
        out = run('import sys, pmsn_mm; assert "mmcv" in sys.modules')
        assert out.returncode == 0, out.stderr[-2000:]
