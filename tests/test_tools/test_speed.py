"""The speed scripts of tools/speed/ run end to end on tiny settings (no
timing asserts)."""
import importlib.util
import os.path as osp
import subprocess
import sys

import pytest

from tests._configs import CONFIGS, REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


def _load(name):
    spec = importlib.util.spec_from_file_location(
        name, osp.join(REPO, 'tools', 'speed', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sampler_benchmark_runs_small():
    out = subprocess.run([
        sys.executable,
        osp.join(REPO, 'tools', 'speed', 'benchmark_samplers.py'),
        '--num-images', '2000', '--num-classes', '50', '--max-count', '200',
        '--cases', '10:100', '2:100', '--powers', '0.5', '--repeats', '2'
    ], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'ms' in out.stdout


def test_import_benchmark_reports_no_heavy_packages(capsys):
    """`import pmsn_mm` (every config's custom_imports) loads no plotting
    or scikit-learn module."""
    bench = _load('benchmark_import')
    result = bench.main(['--repeats', '1'])
    assert result['pmsn_mm']['heavy'] == []
    assert result['pmsn_mm']['median_s'] > 0
    assert 'import pmsn_mm: median' in capsys.readouterr().out


def test_pipeline_benchmark_runs_small(tmp_path, capsys):
    """tools/speed/benchmark_pipeline.py prints the loader costs per
    image and the device time of a batch's views."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'benchmark_pipeline',
        osp.join(REPO, 'tools', 'speed', 'benchmark_pipeline.py'))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    toy = osp.join(
        CONFIGS, 'pmsn',
        'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
    result = bench.main(['--images', '4', '--repeats', '1', '--batch-size',
                         '2', '--work-dir', str(tmp_path), '--device', 'cpu',
                         '--step', toy])
    for key in ('decode_pil_ms', 'decode_cv2_ms', 'per_sample_ms',
                'batched_loader_ms', 'draw_views_ms', 'step_ms'):
        assert result[key] > 0, key
    assert result['draw_over_step'] == pytest.approx(
        result['draw_views_ms'] / result['step_ms'])
    out = capsys.readouterr().out
    assert 'batched-path loader' in out and 'drawing the 12 views' in out
    assert 'drawing the views =' in out
