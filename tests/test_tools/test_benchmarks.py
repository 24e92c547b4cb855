"""Benchmark scripts run end to end on tiny settings (no timing asserts)."""
import importlib.util
import os.path as osp
import subprocess
import sys

import pytest

from tests._configs import CONFIGS, REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


def _load(name):
    spec = importlib.util.spec_from_file_location(
        name, osp.join(REPO, 'tools', 'benchmarks', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pmsn_step_benchmark_reports_numbers(capsys):
    bench = _load('benchmark_pmsn_step')
    cfg = osp.join(CONFIGS, 'pmsn',
                   'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py')
    result = bench.main([cfg, '--batch-size', '4', '--steps', '2',
                         '--warmup', '1', '--device', 'cpu', '--floor'])
    assert result['views'] == 2 and result['batch'] == 4
    assert result['median_step_s'] > 0 and result['images_per_s'] > 0
    assert result['median_floor_s'] > 0
    assert result['overhead'] == pytest.approx(
        result['median_step_s'] / result['median_floor_s'] - 1)
    out = capsys.readouterr().out
    assert 'images/s' in out and 'overhead of the step over its floor' in out


def test_pmsn_step_benchmark_reads_the_views_of_a_config():
    from mmengine.config import Config
    bench = _load('benchmark_pmsn_step')
    paper = Config.fromfile(
        osp.join(CONFIGS, 'pmsn',
                 'pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'))
    assert bench.view_shapes(paper) == [(3, 224)] * 2 + [(3, 96)] * 10
    toy = Config.fromfile(osp.join(
        CONFIGS, 'pmsn',
        'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'))
    assert bench.view_shapes(toy) == [(1, 20)] * 2  # BatchAugmentPreprocessor


def test_sampler_benchmark_runs_small():
    out = subprocess.run([
        sys.executable,
        osp.join(REPO, 'tools', 'benchmarks', 'benchmark_samplers.py'),
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
    """tools/benchmarks/benchmark_pipeline.py prints the loader costs per
    image and the device time of a batch's views."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'benchmark_pipeline',
        osp.join(REPO, 'tools', 'benchmarks', 'benchmark_pipeline.py'))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.main(['--images', '4', '--repeats', '1', '--batch-size',
                         '2', '--work-dir', str(tmp_path)])
    for key in ('decode_pil_ms', 'decode_cv2_ms', 'per_sample_ms',
                'batched_loader_ms', 'draw_views_ms'):
        assert result[key] > 0, key
    out = capsys.readouterr().out
    assert 'batched-path loader' in out and 'drawing the 12 views' in out
