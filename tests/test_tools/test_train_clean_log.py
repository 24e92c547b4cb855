"""The README's main job prints a clean log: no warnings (per-parameter,
deprecation, dataloader restart) and its kNN results as the last line."""
import os
import os.path as osp
import re
import subprocess
import sys

import pytest

from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TOY = osp.join('configs', 'pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')


def test_toy_job_log_has_no_warning_and_ends_on_the_knn_results(tmp_path):
    # 48 images in batches of 16: a pass ends every 3 iterations (where a
    # finite sampler restarted with a warning); checkpoints at 3 and 6
    out = subprocess.run(
        [sys.executable, osp.join('tools', 'train.py'), TOY,
         '--work-dir', str(tmp_path / 'work'), '--cfg-options',
         'train_cfg.max_iters=6', 'train_cfg.val_interval=6',
         'train_dataloader.batch_size=16',
         'train_dataloader.dataset.num_samples=48',
         'val_dataloader.dataset.memory.num_samples=100',
         'val_dataloader.dataset.query.num_samples=40',
         'default_hooks.checkpoint.interval=3'],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, OMP_NUM_THREADS='1'))
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert 'WARNING' not in log, [
        line for line in log.splitlines() if 'WARNING' in line]
    assert 'Warning' not in log, out.stderr[-3000:]
    assert 'target_net: 64 frozen parameters (requires_grad=False) left ' \
        'out of the optimizer' in log
    assert 'Saving checkpoint at 3 iterations' in log
    last = out.stdout.rstrip().splitlines()[-1]
    assert re.search(
        r' - mmengine - INFO - Final validation \(iteration 6\): '
        r'knn_digit/top1: \d+\.\d{4}  knn_background/top1: \d+\.\d{4}$',
        last), last


def test_importing_pmsn_mm_prints_nothing():
    out = subprocess.run([sys.executable, '-c', 'import pmsn_mm'], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout == out.stderr == '', out.stderr
