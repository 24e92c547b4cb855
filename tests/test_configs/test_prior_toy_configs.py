"""The toy configs of the prior study next to the toy PMSN job (which
balances its targets by Sinkhorn towards the power law) -- its control
without Sinkhorn, PMSN with the adaptive power law, PSwAV -- inherit the toy
PMSN job and each run 2 iterations."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

from tests._configs import CONFIGS, small_knn_eval

TOY = osp.join(CONFIGS, 'pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
NO_SINKHORN = osp.join(
    CONFIGS, 'pmsn',
    'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law-no-sinkhorn.py')
ADAPTIVE = osp.join(
    CONFIGS, 'pmsn',
    'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-adaptive-power-law.py')
PSWAV = osp.join(
    CONFIGS, 'pswav',
    'pswav_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')


def _tiny(path, work_dir):
    cfg = Config.fromfile(path)
    cfg.work_dir = str(work_dir)
    cfg.train_cfg.max_iters = 2
    cfg.train_dataloader.batch_size = 16
    cfg.train_dataloader.dataset.num_samples = 64
    cfg.default_hooks.logger.interval = 1
    small_knn_eval(cfg)
    return cfg


def test_toy_configs_inherit_the_toy_job():
    toy = Config.fromfile(TOY)
    for path in (NO_SINKHORN, ADAPTIVE, PSWAV):
        cfg = Config.fromfile(path)
        assert cfg.train_dataloader == toy.train_dataloader, path
        assert cfg.param_scheduler == toy.param_scheduler, path
        assert cfg.model.data_preprocessor == toy.model.data_preprocessor
        for key in ('val_dataloader', 'val_evaluator', 'val_cfg'):
            assert cfg[key] == toy[key], (path, key)
    pswav = Config.fromfile(PSWAV)
    expected = dict(toy.model.backbone, out_type='featmap')
    assert pswav.model.backbone == expected
    assert pswav.model.head.num_prototypes == toy.model.head.num_prototypes
    assert pswav.model.head.prior == toy.model.head.prior
    # no EMA target in PSwAV (the PMSN model's schedule is not inherited)
    assert 'target_momentum' not in pswav.model
    assert toy.model.head.loss.use_sinkhorn is True
    control = Config.fromfile(NO_SINKHORN)
    assert control.model.head.loss.use_sinkhorn is False
    # the control differs from the toy job in that setting only
    control.model.head.loss.use_sinkhorn = True
    assert control.model == toy.model
    adaptive = Config.fromfile(ADAPTIVE).model.head.prior
    assert adaptive.type == 'AdaptivePowerLawPrior'
    assert 'num_prototypes' not in adaptive  # K is set once, on the head


@pytest.mark.parametrize('path, keys', [
    (TOY, ('loss_ce', 'loss_prior', 'num_prototypes_used')),
    (NO_SINKHORN, ('loss_ce', 'loss_prior', 'num_prototypes_used')),
    (ADAPTIVE, ('loss_ce', 'loss_prior', 'prior_tau', 'prior_tau_fit')),
    (PSWAV, ('loss_swav', 'num_prototypes_used', 'codes_prior_kl')),
], ids=['toy', 'no-sinkhorn', 'adaptive', 'pswav'])
def test_toy_config_runs_two_iterations(path, keys, tmp_path):
    runner = Runner.from_cfg(_tiny(path, tmp_path))
    runner.train()
    assert runner.iter == 2
    hub = runner.message_hub
    for key in keys:
        value = hub.get_scalar(f'train/{key}').current()
        assert torch.isfinite(torch.tensor(value)), key
    assert 0 <= hub.get_scalar('val/knn_digit/top1').current() <= 100
    ckpt = torch.load(osp.join(str(tmp_path), 'iter_2.pth'))
    if path == ADAPTIVE:
        prior = runner.model.head.prior
        assert prior.num_updates.item() == 2
        state = ckpt['state_dict']
        assert state['head.prior.num_updates'].item() == 2
        assert torch.equal(state['head.prior.tau'], prior.tau)
        assert hub.get_scalar('train/prior_tau').current() == pytest.approx(
            prior.tau.item())
    if path == PSWAV:
        # SwAVHook froze the prototypes (first epoch): unchanged by training
        w = runner.model.head.prototypes
        assert w.requires_grad is False
