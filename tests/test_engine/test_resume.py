"""Resume: 2 iterations, save, resume and continue — state matches the file."""
import copy
import os.path as osp
import subprocess
import sys

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

from tests._configs import REPO, without_val, write_config

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


class _CaptureAtStart(Hook):
    """Records the state the loop starts from (after load_or_resume)."""

    def before_train(self, runner) -> None:
        self.iter = runner.iter
        self.state = {
            k: v.detach().clone()
            for k, v in runner.model.state_dict().items()
        }
        self.optim = copy.deepcopy(runner.optim_wrapper.state_dict())


def test_resume_restores_iter_optimizer_and_weights(tmp_path):
    cfg_path = write_config(tmp_path)
    work_dir = str(tmp_path / 'work')
    cfg = Config.fromfile(cfg_path)
    cfg.work_dir = work_dir
    cfg.experiment_name = 'first'
    Runner.from_cfg(cfg).train()
    ckpt_path = osp.join(work_dir, 'iter_2.pth')
    saved = torch.load(ckpt_path)  # weights_only=True, the torch default

    cfg = Config.fromfile(cfg_path)
    cfg.work_dir = work_dir
    cfg.experiment_name = 'resumed'
    cfg.train_cfg.max_iters = 4
    cfg.resume = True
    cfg.load_from = ckpt_path
    runner = Runner.from_cfg(cfg)
    capture = _CaptureAtStart()
    runner.register_hook(capture)
    runner.train()

    assert saved['meta']['iter'] == 2
    assert capture.iter == 2
    for key, value in saved['state_dict'].items():
        assert torch.equal(capture.state[key], value), key
    saved_state = saved['optimizer']['state']
    assert len(saved_state) > 0
    for pid, pstate in saved_state.items():
        for name, value in pstate.items():
            assert torch.equal(capture.optim['state'][pid][name], value)
    assert saved_state[0]['step'].item() == 2
    # training continued from there
    assert runner.iter == 4
    final = torch.load(osp.join(work_dir, 'iter_4.pth'))
    assert final['optimizer']['state'][0]['step'].item() == 4
    key = 'head.fc.weight'
    assert not torch.equal(final['state_dict'][key], saved['state_dict'][key])


def test_cli_auto_resume(tmp_path):
    """`tools/train.py --resume` in a fresh process (torch>=2.6 default
    load)."""
    cfg_path = write_config(tmp_path)
    work_dir = str(tmp_path / 'cli')
    base = [sys.executable, osp.join(REPO, 'tools', 'train.py'), cfg_path,
            '--work-dir', work_dir]
    subprocess.run(base, check=True, cwd=REPO, capture_output=True)
    out = subprocess.run(
        base + ['--resume', '--cfg-options', 'train_cfg.max_iters=3'],
        cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert 'resumed epoch: 0, iter: 2' in log
    assert torch.load(osp.join(work_dir, 'iter_3.pth'))['meta']['iter'] == 3


def test_resume_continues_the_adaptive_prior_estimate(tmp_path):
    """AdaptivePowerLawPrior's buffers travel in the checkpoint: a resumed
    run starts from the saved estimate and keeps counting updates."""
    path = osp.join(REPO, 'configs', 'pmsn', 'pmsn_vit-mini-p4_1xb128-15e-'
                    'cpu_shapes-digits-adaptive-power-law.py')

    def tiny(max_iters, name):
        cfg = Config.fromfile(path)
        cfg.work_dir = str(tmp_path / 'work')
        cfg.experiment_name = name
        cfg.train_cfg.max_iters = max_iters
        cfg.train_dataloader.batch_size = 16
        cfg.train_dataloader.dataset.num_samples = 64
        without_val(cfg)
        cfg.default_hooks.checkpoint.interval = 2
        # no warm-up and momentum 0: the estimate changes every step
        cfg.model.head.prior.warmup_updates = 0
        cfg.model.head.prior.momentum = 0.0
        return cfg

    Runner.from_cfg(tiny(2, 'first')).train()
    saved = torch.load(osp.join(str(tmp_path / 'work'), 'iter_2.pth'))
    prefix = 'head.prior.'
    saved_prior = {k[len(prefix):]: v for k, v in saved['state_dict'].items()
                   if k.startswith(prefix)}
    assert set(saved_prior) == {'tau', 'tau_fit', 'usage_ema', 'num_updates'}
    assert saved_prior['num_updates'].item() == 2
    assert saved_prior['usage_ema'].sum().item() > 0

    cfg = tiny(4, 'resumed')
    cfg.resume = True
    cfg.load_from = osp.join(str(tmp_path / 'work'), 'iter_2.pth')
    runner = Runner.from_cfg(cfg)
    capture = _CaptureAtStart()
    runner.register_hook(capture)
    runner.train()
    for name, value in saved_prior.items():
        assert torch.equal(capture.state[prefix + name], value), name
    prior = runner.model.head.prior
    assert prior.num_updates.item() == 4
    assert not torch.equal(prior.usage_ema, saved_prior['usage_ema'])


class _RecordSamples(Hook):
    """The ``sample_idx`` of every training batch, by iteration."""

    def __init__(self) -> None:
        self.batches = {}

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.batches[runner.iter + 1] = [
            s.sample_idx for s in data_batch['data_samples']
        ]


def test_toy_job_resumes_its_infinite_sampler_bit_identically(tmp_path):
    """The toy PMSN job draws its batches from mmengine's InfiniteSampler
    (batches run across passes over the data): a resume from iteration 3
    continues with the batches, and ends with the weights, of the
    uninterrupted run."""
    path = osp.join(REPO, 'configs', 'pmsn', 'pmsn_vit-mini-p4_1xb128-15e-'
                    'cpu_shapes-digits-power-law.py')

    def tiny(work_dir, name):
        cfg = Config.fromfile(path)
        assert cfg.train_dataloader.sampler.type == 'InfiniteSampler'
        cfg.work_dir = str(tmp_path / work_dir)
        cfg.experiment_name = name
        cfg.train_cfg.max_iters = 6
        # 40 images in batches of 16: the third batch spans two passes
        cfg.train_dataloader.batch_size = 16
        cfg.train_dataloader.dataset.num_samples = 40
        without_val(cfg)
        cfg.default_hooks.checkpoint.interval = 3
        cfg.default_hooks.checkpoint.save_best = None
        cfg.default_hooks.checkpoint.max_keep_ckpts = 2
        cfg.randomness = dict(seed=0, deterministic=True)
        return cfg

    full = Runner.from_cfg(tiny('full', 'full'))
    full_samples = _RecordSamples()
    full.register_hook(full_samples)
    full.train()
    first_pass = (full_samples.batches[1] + full_samples.batches[2] +
                  full_samples.batches[3][:8])
    assert sorted(first_pass) == list(range(40))

    cfg = tiny('resumed', 'resumed')
    cfg.resume = True
    cfg.load_from = osp.join(str(tmp_path / 'full'), 'iter_3.pth')
    resumed = Runner.from_cfg(cfg)
    resumed_samples = _RecordSamples()
    resumed.register_hook(resumed_samples)
    resumed.train()

    assert sorted(resumed_samples.batches) == [4, 5, 6]
    for it in (4, 5, 6):
        assert resumed_samples.batches[it] == full_samples.batches[it], it
    a = torch.load(osp.join(str(tmp_path / 'full'), 'iter_6.pth'))
    b = torch.load(osp.join(str(tmp_path / 'resumed'), 'iter_6.pth'))
    assert any(k.startswith('target_net.') for k in a['state_dict'])
    for key, value in a['state_dict'].items():
        assert torch.equal(value, b['state_dict'][key]), key
