"""TargetEMAHook: the EMA target of a real run follows official MSN's
update, step by step, the last update and the checkpoint included."""
import copy
import os.path as osp

import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

from tests._configs import TINY_PMSN, write_config


class _Record(Hook):
    """Online and target weights at the start and after every iteration
    (after TargetEMAHook)."""

    priority = 'LOWEST'

    def __init__(self):
        self.online, self.target = [], []

    def _take(self, runner):
        model = runner.model
        online = torch.nn.Sequential(model.backbone, model.neck)
        self.online.append(copy.deepcopy(online.state_dict()))
        self.target.append(
            copy.deepcopy(model.target_net.module.state_dict()))

    def before_train(self, runner):
        self._take(runner)

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        self._take(runner)


def _official_msn_targets(online, max_iters, m0=0.9, m1=1.0, scale=1.25):
    """msn_train.py: target = copy(encoder); after step j (0-based):
    m = next(momentum_scheduler), the generator
    (m0 + i * (m1 - m0) / (ipe * num_epochs * ipe_scale) for i in ...),
    target = m * target + (1 - m) * encoder."""
    schedule = (m0 + i * (m1 - m0) / (max_iters * scale)
                for i in range(int(max_iters * scale) + 1))
    targets = [dict(online[0])]
    for step in range(max_iters):
        m = next(schedule)
        targets.append({
            k: m * v + (1 - m) * online[step + 1][k] if v.is_floating_point()
            else online[step + 1][k]
            for k, v in targets[-1].items()
        })
    return targets


def test_target_follows_the_official_msn_update_step_by_step(tmp_path):
    cfg = Config.fromfile(write_config(tmp_path, TINY_PMSN))
    cfg.work_dir = str(tmp_path / 'work')
    cfg.val_dataloader = cfg.val_evaluator = cfg.val_cfg = None
    runner = Runner.from_cfg(cfg)
    record = _Record()
    runner.register_hook(record)
    runner.train()
    assert len(record.target) == 7  # start + 6 iterations
    expected = _official_msn_targets(record.online, 6)
    params = {k for k, _ in runner.model.target_net.module.named_parameters()}
    for step, (ours, official) in enumerate(zip(record.target, expected)):
        for key in params:
            torch.testing.assert_close(ours[key], official[key], rtol=0,
                                       atol=1e-6, msg=f'{key}, step {step}')
    # the last update is in the model and in the final checkpoint
    saved = torch.load(osp.join(cfg.work_dir, 'iter_6.pth'),
                       weights_only=True)['state_dict']
    for key in params:
        torch.testing.assert_close(saved[f'target_net.module.{key}'],
                                   expected[-1][key], rtol=0, atol=1e-6)
    # the target moved at every step (the online encoder trained)
    for before, after in zip(record.target, record.target[1:]):
        assert any(not torch.equal(before[k], after[k]) for k in params)
