"""PrototypeUsageHook: numbers by hand, each stage, and a real Runner run."""
import json
import math
import os.path as osp
from types import SimpleNamespace

import pytest
import torch
from mmengine.config import Config
from mmengine.logging import MMLogger
from mmengine.runner import Runner
from torch import nn

from pmsn_mm.engine.hooks import PrototypeUsageHook
from pmsn_mm.models.heads import PMSNHead
from tests._configs import CONFIGS

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

PNG_HEADER = b'\x89PNG\r\n\x1a\n'
LN2, LN3 = math.log(2), math.log(3)
P = 'prototype_usage/'


# ------------------------------------------------------------ fakes
class _Model(nn.Module):
    """A prototype model as the hook sees it: a PMSNHead (uniform prior over
    3 prototypes) whose ``loss`` records the step's statistics."""

    def __init__(self) -> None:
        super().__init__()
        self.head = PMSNHead(num_prototypes=3, in_channels=3,
                             temperature=1e-3)
        with torch.no_grad():
            self.head.prototypes.copy_(torch.eye(3))

    def step(self, anchors, targets):
        """One training step's loss (one-hot probabilities for orthogonal
        embeddings)."""
        return self.head.loss(anchors, targets)


class _Vis:

    def __init__(self) -> None:
        self.scalars, self.images = [], []

    def add_scalars(self, scalars, step=0, **kwargs):
        self.scalars.append((step, dict(scalars)))

    def add_image(self, name, image, step=0, **kwargs):
        self.images.append((name, step, image.shape))


def _runner(tmp_path, model=None, iteration=0):
    return SimpleNamespace(
        model=model or _Model(),
        iter=iteration,
        work_dir=str(tmp_path),
        visualizer=_Vis(),
        logger=MMLogger.get_current_instance())


# anchors: two on prototype 0, one each on 1, 2 -> p̄ = [.5, .25, .25]
ANCHORS = torch.tensor([[1., 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
TARGETS = torch.tensor([[0., 0, 1]] * 4)  # all on prototype 2


def _hand_values():
    return {
        P + 'entropy': 1.5 * LN2,
        P + 'effective_clusters': 2**1.5,
        P + 'kl_forward': LN3 - 1.5 * LN2,
        P + 'kl_reverse': 5 / 3 * LN2 - LN3,
        P + 'prior_effective_clusters': 3.0,
    }


# ------------------------------------------------------------ numbers
def test_compute_scalars_by_hand():
    scalars = PrototypeUsageHook.compute_scalars(
        torch.tensor([0.5, 0.25, 0.25]), torch.full((3, ), 1 / 3),
        torch.tensor([True, False, True]), torch.tensor([True, True, True]))
    for key, value in _hand_values().items():
        assert scalars[key] == pytest.approx(value, abs=1e-7), key
    assert scalars[P + 'num_used'] == 2
    assert scalars[P + 'num_used_cumulative'] == 3


@pytest.mark.parametrize('kwargs, match', [
    (dict(interval=0), 'interval must be an int >= 1'),
    (dict(interval=None), 'interval must be an int >= 1'),
])
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrototypeUsageHook(**kwargs)


def test_before_train_rejects_non_prototype_model(tmp_path):
    model = nn.Module()
    model.head = nn.Linear(2, 2)
    with pytest.raises(AttributeError,
                       match='PrototypeUsageHook needs a prototype model '
                       'whose head gives its step statistics'):
        PrototypeUsageHook().before_train(_runner(tmp_path, model))


def test_log_reads_the_step_of_the_loss(tmp_path):
    hook = PrototypeUsageHook(interval=1)
    runner = _runner(tmp_path, iteration=4)
    runner.model.step(ANCHORS, TARGETS)
    hook.after_train_iter(runner, 4)
    scalars = runner.visualizer.scalars[0][1]
    assert runner.visualizer.scalars[0][0] == 5
    for key, value in _hand_values().items():
        assert scalars[key] == pytest.approx(value, abs=1e-6), key
    assert scalars[P + 'num_used'] == 1  # the targets' argmax
    png = osp.join(str(tmp_path), 'prototype_usage', 'iter_5.png')
    with open(png, 'rb') as f:
        assert f.read(8) == PNG_HEADER
    assert runner.visualizer.images[0][:2] == ('prototype_usage', 5)
    with open(osp.join(str(tmp_path), 'prototype_usage', 'iter_5.json')) as f:
        saved = json.load(f)
    assert saved['mean_probs_sorted'] == pytest.approx([0.5, 0.25, 0.25])
    assert saved['kl_forward'] == pytest.approx(LN3 - 1.5 * LN2, abs=1e-6)
    # the window restarts after a log
    assert hook.log(runner) == {}


def test_schedule_window_mean_and_cumulative_usage(tmp_path):
    hook = PrototypeUsageHook(interval=2, add_image=False)
    runner = _runner(tmp_path)
    hook.before_train(runner)
    on_0 = torch.tensor([[1., 0, 0]] * 4)
    on_1 = torch.tensor([[0., 1, 0]] * 4)
    for it, (anchors, targets) in enumerate([(on_0, on_0), (on_1, on_1),
                                             (on_1, on_1), (on_1, on_1)]):
        runner.iter = it
        runner.model.step(anchors, targets)
        hook.after_train_iter(runner, it)
    logged = runner.visualizer.scalars
    assert [step for step, _ in logged] == [2, 4]
    # window 1: p̄ = [.5, .5, 0]; window 2: p̄ = [0, 1, 0]
    assert logged[0][1][P + 'entropy'] == pytest.approx(LN2, abs=1e-6)
    assert logged[0][1][P + 'num_used'] == 2
    assert logged[1][1][P + 'entropy'] == pytest.approx(0, abs=1e-6)
    assert logged[1][1][P + 'num_used'] == 1
    assert logged[1][1][P + 'num_used_cumulative'] == 2
    assert runner.visualizer.images == []


# ------------------------------------------------------------ Runner
def test_runs_inside_a_real_runner(tmp_path):
    cfg = Config.fromfile(
        osp.join(CONFIGS, 'pmsn',
                 'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'))
    cfg.custom_hooks = [dict(type='PrototypeUsageHook', interval=1)]
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.train_dataloader.batch_size = 8
    cfg.train_dataloader.dataset.num_samples = 16
    cfg.train_cfg.max_iters = 2
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=100)
    cfg.work_dir = str(tmp_path)
    cfg.experiment_name = 'prototype_usage_hook'
    runner = Runner.from_cfg(cfg)
    runner.train()

    for step in (1, 2):
        with open(tmp_path / 'prototype_usage' / f'iter_{step}.png',
                  'rb') as f:
            data = f.read()
        assert data[:8] == PNG_HEADER and len(data) > 1000
    scalar_file = osp.join(runner.log_dir, 'vis_data', 'scalars.json')
    with open(scalar_file) as f:
        rows = [json.loads(line) for line in f]
    usage = [r for r in rows if P + 'entropy' in r]
    assert [r['step'] for r in usage] == [1, 2]
    for row in usage:
        assert 0 < row[P + 'effective_clusters'] <= 10
        assert row[P + 'effective_clusters'] == pytest.approx(
            math.exp(row[P + 'entropy']))
        assert row[P + 'kl_forward'] >= 0 and row[P + 'kl_reverse'] >= 0
        assert 1 <= row[P + 'num_used'] <= row[P + 'num_used_cumulative']
    assert usage[1][P +
                    'num_used_cumulative'] >= usage[0][P +
                                                       'num_used_cumulative']
    # the loss's own KL(p̄ || prior) of that step (logged every iteration):
    # the hook runs no forward of its own, it reads the step
    loss_kl = {r['step']: r['prior_kl'] for r in rows if 'prior_kl' in r}
    for row in usage:
        assert row[P + 'kl_forward'] == pytest.approx(
            loss_kl[row['step']], rel=1e-4, abs=1e-7)
    # the power-law prior of the config has exp H < 10
    assert usage[0][P + 'prior_effective_clusters'] == pytest.approx(
        9.3095, abs=1e-3)
