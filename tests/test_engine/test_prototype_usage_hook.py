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

PNG_HEADER = b'\x89PNG\r\n\x1a\n'
LN2, LN3 = math.log(2), math.log(3)
P = 'prototype_usage/'


# ------------------------------------------------------------ fakes
class _Pre(nn.Module):

    def forward(self, data, training=False):
        return dict(
            inputs=[v.float() for v in data['inputs']], data_samples=None)


class _TupleOut(nn.Module):
    """Neck stand-in: optional BN, returns a 1-tuple like MSNProjector."""

    def __init__(self, bn: bool = False) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(3) if bn else nn.Identity()

    def forward(self, x):
        return (self.bn(x), )


def _head():
    # one-hot probabilities for orthogonal inputs; uniform prior
    head = PMSNHead(num_prototypes=3, in_channels=3, temperature=1e-3)
    with torch.no_grad():
        head.prototypes.copy_(torch.eye(3))
    return head


class _Model(nn.Module):

    def __init__(self, bn: bool = False) -> None:
        super().__init__()
        self.data_preprocessor = _Pre()
        self.backbone = nn.Identity()
        self.neck = _TupleOut(bn)
        self.head = _head()


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


# anchors (view 1): two on prototype 0, one each on 1, 2 -> p̄ = [.5,.25,.25]
ANCHORS = torch.tensor([[1., 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
TARGETS = torch.tensor([[0., 0, 1]] * 4)  # view 0: all on prototype 2
BATCH = dict(inputs=[TARGETS, ANCHORS], data_samples=None)


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


# ------------------------------------------------------------ stages
@pytest.mark.parametrize('kwargs, match', [
    (dict(interval=0), 'interval must be an int >= 1'),
    (dict(interval=None), 'interval must be an int >= 1'),
    (dict(interval=True), 'interval must be an int >= 1'),
    (dict(probe_interval=0), 'probe_interval must be an int >= 1'),
    (dict(view_index=-1), 'view_index must be an int >= 0'),
])
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrototypeUsageHook(**kwargs)


def test_before_train_rejects_non_prototype_model(tmp_path):
    model = nn.Module()
    model.backbone = nn.Identity()
    with pytest.raises(AttributeError,
                       match=r"'head.probabilities', 'head.prior_probs'\]"):
        PrototypeUsageHook().before_train(_runner(tmp_path, model))


def test_anchor_probabilities_use_the_anchor_view():
    hook = PrototypeUsageHook()
    probs = hook.anchor_probabilities(_Model(), BATCH)
    assert torch.allclose(probs, ANCHORS)
    probs0 = PrototypeUsageHook(view_index=0).anchor_probabilities(
        _Model(), BATCH)
    assert torch.allclose(probs0, TARGETS)
    with pytest.raises(ValueError, match='view_index=2 but the batch has'):
        PrototypeUsageHook(view_index=2).anchor_probabilities(_Model(), BATCH)


def test_probe_leaves_model_state_untouched():
    model = _Model(bn=True).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    PrototypeUsageHook().anchor_probabilities(model, BATCH)
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key  # BN stats not updated
    assert model.training and model.neck.bn.training


def test_log_writes_scalars_plot_and_json(tmp_path):
    hook = PrototypeUsageHook(interval=1)
    runner = _runner(tmp_path, iteration=4)
    hook.accumulate(hook.anchor_probabilities(runner.model, BATCH))
    scalars = hook.log(runner)
    assert runner.visualizer.scalars == [(5, scalars)]
    for key, value in _hand_values().items():
        assert scalars[key] == pytest.approx(value, abs=1e-6), key
    assert scalars[P + 'num_used'] == 3
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
    hook = PrototypeUsageHook(interval=2, probe_interval=1, add_image=False)
    runner = _runner(tmp_path)
    hook.before_train(runner)
    on_0 = dict(inputs=[TARGETS, torch.tensor([[1., 0, 0]] * 4)])
    on_1 = dict(inputs=[TARGETS, torch.tensor([[0., 1, 0]] * 4)])
    for it, batch in enumerate([on_0, on_1, on_1, on_1]):
        runner.iter = it
        hook.after_train_iter(runner, it, batch)
    logged = runner.visualizer.scalars
    assert [step for step, _ in logged] == [2, 4]
    # window 1: p̄ = [.5, .5, 0]; window 2: p̄ = [0, 1, 0]
    assert logged[0][1][P + 'entropy'] == pytest.approx(LN2, abs=1e-6)
    assert logged[1][1][P + 'entropy'] == pytest.approx(0, abs=1e-6)
    assert logged[1][1][P + 'num_used'] == 1
    assert logged[1][1][P + 'num_used_cumulative'] == 2
    assert runner.visualizer.images == []


def test_default_probes_only_log_iterations(tmp_path):
    hook = PrototypeUsageHook(interval=3)
    runner = _runner(tmp_path)
    calls = []
    hook.accumulate = calls.append
    hook.log = lambda r: None
    for it in range(6):
        runner.iter = it
        hook.after_train_iter(runner, it, BATCH)
    assert len(calls) == 2


# ------------------------------------------------------------ Runner
def test_runs_inside_a_real_runner(tmp_path):
    cfg = Config.fromfile(
        osp.join(CONFIGS, 'pmsn',
                 'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py'))
    cfg.custom_hooks = [dict(type='PrototypeUsageHook', interval=1)]
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
    # the power-law prior of the config has exp H < 10
    assert usage[0][P + 'prior_effective_clusters'] == pytest.approx(
        9.3095, abs=1e-3)
