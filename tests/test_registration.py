"""A plain mmpretrain config + the custom_imports line builds pmsn_mm parts."""
import json
import subprocess
import sys
import textwrap

import pytest

from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

CONFIG = """
_base_ = 'mmpretrain::_base_/default_runtime.py'
custom_imports = dict(imports=['pmsn_mm'], allow_failed_imports=False)
toy = dict(type='PowerLawOverlayDataset', num_samples=16)
ddp = dict(type='DeviceAwareDistributedDataParallel')
"""

SCRIPT = textwrap.dedent("""
    import json, sys
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    assert 'pmsn_mm' not in sys.modules
    cfg = Config.fromfile(sys.argv[1])   # custom_imports imports pmsn_mm
    init_default_scope(cfg.default_scope)
    from mmpretrain.registry import DATASETS
    from mmengine.registry import MODEL_WRAPPERS
    ds = DATASETS.build(cfg.toy)
    print(json.dumps(dict(
        imported='pmsn_mm' in sys.modules,
        scope=cfg.default_scope,
        dataset=type(ds).__module__ + '.' + type(ds).__name__,
        length=len(ds),
        wrapper=MODEL_WRAPPERS.get(cfg.ddp['type']).__module__)))
""")


def test_plain_mmpretrain_config_builds_pmsn_mm_modules(tmp_path):
    cfg = tmp_path / 'plain_mmpretrain.py'
    cfg.write_text(CONFIG)
    out = subprocess.run([sys.executable, '-c', SCRIPT, str(cfg)],
                         cwd=str(tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result['imported'] is True
    assert result['scope'] == 'mmpretrain'
    assert result['dataset'] == (
        'pmsn_mm.datasets.power_law_overlay.PowerLawOverlayDataset')
    assert result['length'] == 16
    assert result['wrapper'].startswith('pmsn_mm.engine.model_wrappers')


def test_default_runtime_has_scope_and_custom_imports():
    from mmengine.config import Config
    cfg = Config.fromfile(f'{REPO}/configs/_base_/default_runtime.py')
    assert cfg.default_scope == 'mmpretrain'
    assert cfg.custom_imports == dict(
        imports=['pmsn_mm'], allow_failed_imports=False)
