"""tools/dist_train.sh with 2 CPU processes (gloo) trains a tiny config."""
import glob
import os
import os.path as osp
import subprocess

import pytest
import torch

from tests._configs import REPO
from tests._dist import free_port

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

CONFIG = osp.join(REPO, 'configs', 'simclr',
                  'simclr_resnet18_2xb16-toy_power-law-overlay.py')


def test_dist_train_two_cpu_processes(tmp_path):
    work_dir = str(tmp_path / 'dist')
    # without OMP_NUM_THREADS, as a user starts it
    env = {k: v for k, v in os.environ.items()
           if k not in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS')}
    env['PORT'] = str(free_port())
    out = subprocess.run([
        'bash',
        osp.join(REPO, 'tools', 'dist_train.sh'), CONFIG, '2', '--work-dir',
        work_dir, '--cfg-options', 'train_cfg.max_iters=2',
        'train_dataloader.batch_size=4',
        'train_dataloader.dataset.num_samples=64',
        'default_hooks.checkpoint.interval=2',
        'default_hooks.logger.interval=1'
    ], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    assert 'Distributed training: True' in log
    assert 'GPU number: 2' in log  # mmengine's name for the world size
    assert 'using the gloo backend (rank 0 of 2)' in log
    # the run's environment is the machine's; the config logged and dumped
    # is the one written (nccl, no wrapper): it reruns as such on GPUs
    assert "dist_cfg: {'backend': 'gloo'}" in log
    assert "dist_cfg=dict(backend='nccl')" in log
    assert 'DeviceAwareDistributedDataParallel' not in log
    assert 'Iter(train) [2/2]' in log
    ckpt = torch.load(osp.join(work_dir, 'iter_2.pth'))
    assert ckpt['meta']['iter'] == 2
    # one log per run; rank 1 writes none (mmengine logs on rank 0 only)
    assert len(glob.glob(osp.join(work_dir, '*', '*.log'))) == 1
    # quiet: neither torchrun's nor mmengine's thread notes (dist_train.sh
    # sets torchrun's OMP_NUM_THREADS=1 itself), no DDP deprecation note
    assert 'Setting OMP_NUM_THREADS' not in log
    assert 'Setting MKL_NUM_THREADS' not in log
    assert '`broadcast_buffers` is deprecated' not in log
    assert 'CPU threads: 1 of' in log and 'OMP_NUM_THREADS=1' in log
    assert 'Warning' not in out.stderr, out.stderr[-3000:]


def test_exit_code_counter_counts_a_clean_launch(tmp_path):
    """.dev_scripts/count_dist_exit_codes.py (run with --runs 20 for the
    statistic) launches dist_train.sh and sees exit 0 + its checkpoint."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'count_dist_exit_codes',
        osp.join(REPO, '.dev_scripts', 'count_dist_exit_codes.py'))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    counts = tool.main(['--runs', '1', '--keep', str(tmp_path)])
    assert dict(counts) == {(0, True): 1}
