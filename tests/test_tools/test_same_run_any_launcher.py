"""The config carries the run: the main job's config trained a few
iterations by pmsn_mm's tools/train.py and by mmpretrain's own
tools/train.py (the config's custom_imports import pmsn_mm, its
runner_type builds PMSNRunner) gives the same losses at every iteration,
the same final validation and the same checkpoint, tensor for tensor."""
import glob
import json
import os
import os.path as osp
import subprocess
import sys

import mmpretrain
import pytest
import torch

from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

MAIN_JOB = osp.join(
    REPO, 'configs', 'pmsn',
    'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
TOOLS = {
    'pmsn_mm': osp.join(REPO, 'tools', 'train.py'),
    'mmpretrain': osp.join(osp.dirname(mmpretrain.__file__), '.mim', 'tools',
                           'train.py'),
}
OPTIONS = [
    'train_cfg.max_iters=3', 'train_cfg.val_interval=3',
    'train_dataloader.batch_size=16',
    'train_dataloader.dataset.num_samples=64',
    'val_dataloader.dataset.memory.num_samples=100',
    'val_dataloader.dataset.query.num_samples=40',
    'default_hooks.logger.interval=1', 'default_hooks.checkpoint.interval=3',
    'log_processor.window_size=1'
]


def _train(tool: str, work_dir: str) -> str:
    # one thread: the same kernels in both runs, whatever the machine's load
    env = dict(os.environ, OMP_NUM_THREADS='1')
    out = subprocess.run([sys.executable, TOOLS[tool], MAIN_JOB, '--work-dir',
                          work_dir, '--cfg-options', *OPTIONS],
                         capture_output=True, text=True, env=env, cwd=REPO,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout + out.stderr


def _losses(work_dir: str):
    [path] = glob.glob(osp.join(work_dir, '*', 'vis_data', 'scalars.json'))
    with open(path) as f:
        records = [json.loads(line) for line in f]
    return [{k: v for k, v in r.items() if k.startswith('loss')}
            for r in records if 'loss' in r]


def test_mmpretrains_tool_runs_the_config_as_ours(tmp_path):
    logs = {tool: _train(tool, str(tmp_path / tool)) for tool in TOOLS}
    ours, theirs = (_losses(str(tmp_path / tool)) for tool in TOOLS)
    assert len(ours) == 3 and ours == theirs
    for log in logs.values():  # the runner's own work, under either tool
        assert 'Dataloaders fitted to this machine' in log
        assert 'CPU threads: 1 of' in log
    finals = [next(line.split(' - ')[-1] for line in log.splitlines()
                   if 'Final validation (iteration 3)' in line)
              for log in logs.values()]
    assert finals[0] == finals[1]
    checkpoints = [torch.load(str(tmp_path / tool / 'iter_3.pth'),
                              weights_only=True)['state_dict']
                   for tool in TOOLS]
    assert checkpoints[0].keys() == checkpoints[1].keys()
    for key, value in checkpoints[0].items():
        assert torch.equal(value, checkpoints[1][key]), key


def test_mmpretrains_tool_gets_the_work_dir_guard(tmp_path):
    """A second run into the same work dir is refused under mmpretrain's
    tool too, and leaves the work dir as it was."""
    work_dir = str(tmp_path / 'run')
    os.makedirs(work_dir)
    torch.save(dict(meta=dict(iter=2)), osp.join(work_dir, 'iter_2.pth'))
    env = dict(os.environ, OMP_NUM_THREADS='1')
    out = subprocess.run([sys.executable, TOOLS['mmpretrain'], MAIN_JOB,
                          '--work-dir', work_dir, '--cfg-options', *OPTIONS],
                         capture_output=True, text=True, env=env, cwd=REPO,
                         timeout=600)
    assert out.returncode != 0
    assert 'already holds checkpoints of an earlier run (iter_2.pth)' in \
        out.stderr
    assert os.listdir(work_dir) == ['iter_2.pth']
