"""PrototypeAssignmentHook: points by hand on a fake prototype model, the
labelled inputs it caches, and that it leaves the training RNG alone."""
import json
import math
from types import SimpleNamespace

import pytest
import torch
from mmengine.logging import MMLogger
from mmpretrain.registry import HOOKS
from mmpretrain.structures import DataSample
from torch import nn

from pmsn_mm.engine.hooks import PrototypeAssignmentHook
from pmsn_mm.engine.hooks.prototype_assignment_hook import (brightness_deciles,
                                                            embed_inputs,
                                                            labelled_inputs)

P = 'prototype_assignment/'


class _Preprocessor(nn.Module):
    """Evaluation path of a pre-processor: ``(x - 1) / 2``."""

    def forward(self, data, training=False):
        assert not training
        return dict(inputs=(data['inputs'].float() - 1) / 2,
                    data_samples=data['data_samples'])


class _Prior(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.probs = torch.full((3, ), 1 / 3, dtype=torch.float64)
        self.tau = torch.tensor(0.0)


class _Model(nn.Module):
    """Image i (its pre-processed pixel value v_i = i) maps to fixed
    probabilities: the online encoder to ONLINE[i], the target to
    TARGET[i]; the projector embedding is one-hot by image parity."""

    def __init__(self) -> None:
        super().__init__()
        self.data_preprocessor = _Preprocessor()
        self.head = SimpleNamespace(prior=_Prior())
        self.target_net = nn.Identity()
        self.calls = []

    def embed(self, inputs, target=False, stages=()):
        self.calls.append((self.training, target, len(inputs)))
        idx = inputs.flatten(1)[:, 0].round().long()
        table = TARGET if target else ONLINE
        out = dict(probs=table[idx],
                   neck=torch.eye(2)[idx % 2],
                   backbone=inputs.flatten(1))
        return {s: out[s] for s in stages}


# argmax: online [0, 0, 2, 1], target [1, 1, 1, 1]
ONLINE = torch.tensor([[.7, .2, .1], [.7, .2, .1], [.1, .2, .7],
                       [.1, .7, .2]])
TARGET = torch.tensor([[.2, .7, .1]] * 4)
DIGITS = [0, 0, 1, 1]


def _dataset():
    # raw pixel 2 i + 1 -> pre-processed i
    return [
        dict(inputs=torch.full((1, 2, 2), 2. * i + 1),
             data_samples=DataSample(metainfo=dict(digit_label=DIGITS[i])))
        for i in range(4)
    ]


class _Vis:

    def __init__(self) -> None:
        self.scalars = []

    def add_scalars(self, scalars, step=0, **kwargs):
        self.scalars.append((step, dict(scalars)))


def _runner(tmp_path, model):
    return SimpleNamespace(model=model, iter=0, work_dir=str(tmp_path),
                           visualizer=_Vis(),
                           logger=MMLogger.get_current_instance())


def test_labelled_inputs_and_embeddings():
    model = _Model()
    inputs, labels = labelled_inputs(model, _dataset(),
                                     dict(digit='digit_label'), 3,
                                     batch_size=2)
    assert inputs.flatten(1)[:, 0].tolist() == [0.0, 1.0, 2.0]
    assert labels['digit'].tolist() == DIGITS[:3]
    out = embed_inputs(model, inputs, ('probs', ), batch_size=2)
    torch.testing.assert_close(out['probs'], ONLINE[:3])
    assert [c[2] for c in model.calls] == [2, 1]
    with pytest.raises(ValueError, match='num_samples must be an int in'):
        labelled_inputs(model, _dataset(), num_samples=5)


def test_labelled_inputs_leave_the_global_rng_alone():
    state = torch.get_rng_state()
    labelled_inputs(_Model(), _dataset(), dict(digit='digit_label'))
    assert torch.equal(torch.get_rng_state(), state)


def test_brightness_deciles():
    # means 0..19: two images per decile
    x = torch.arange(20.).reshape(20, 1, 1, 1).expand(20, 1, 2, 2)
    assert brightness_deciles(x).tolist() == [i // 2 for i in range(20)]


def test_points_by_hand(tmp_path):
    model = _Model()
    model.train()
    runner = _runner(tmp_path, model)
    hook = PrototypeAssignmentHook(_dataset(), dict(digit='digit_label'),
                                   interval=2, out_file='curve.json')
    hook.before_train(runner)
    for i in range(5):
        runner.iter = i
        hook.after_train_iter(runner, i)
    assert [p['iter'] for p in hook.points] == [0, 2, 4]
    point = hook.points[0]
    # online argmax [0, 0, 2, 1] vs digits [0, 0, 1, 1]: NMI 2 ln2 / 2.5 ln2
    assert point['nmi_digit'] == pytest.approx(0.8)
    assert point['target_nmi_digit'] == pytest.approx(0.0, abs=1e-12)
    assert point['anchor_usage_sorted'] == pytest.approx([.5, .25, .25])
    assert point['target_usage_sorted'] == pytest.approx([1, 0, 0])
    assert (point['num_used_anchor'], point['num_used_target']) == (3, 1)
    h = -(.7 * math.log(.7) + .2 * math.log(.2) + .1 * math.log(.1))
    assert point['mean_anchor_entropy'] == pytest.approx(h)
    mean = [.4, .325, .275]
    assert point['kl_mean_probs_prior'] == pytest.approx(
        sum(p * math.log(3 * p) for p in mean))
    # neck one-hot by parity: two e1, two e2 -> sqrt(1/3) * sqrt(2)
    assert point['collapse_indicator'] == pytest.approx(math.sqrt(2 / 3))
    assert point['prior_tau'] == 0.0
    # eval mode for the forwards, training mode restored
    assert model.training and not any(c[0] for c in model.calls)
    assert {c[1] for c in model.calls} == {False, True}
    saved = json.load(open(tmp_path / 'curve.json'))
    assert [p['iter'] for p in saved] == [0, 2, 4]
    step, scalars = runner.visualizer.scalars[1]
    assert step == 2 and scalars[P + 'nmi_digit'] == pytest.approx(0.8)
    assert P + 'anchor_usage_sorted' not in scalars


def test_model_without_target_repeats_the_online_encoder(tmp_path):
    model = _Model()
    del model.target_net
    hook = PrototypeAssignmentHook(_dataset(), dict(digit='digit_label'),
                                   brightness=True)
    hook.before_train(_runner(tmp_path, model))
    point = hook.points[0]
    assert point['target_nmi_digit'] == point['nmi_digit'] == \
        pytest.approx(0.8)
    # 4 images, one per brightness level: the argmax [0, 0, 2, 1] is a
    # coarsening -> NMI 2 H(argmax) / (H(argmax) + ln 4) = 3 / 3.5
    assert point['nmi_brightness'] == pytest.approx(3 / 3.5)


def test_refuses_a_model_without_prototypes(tmp_path):
    hook = PrototypeAssignmentHook(_dataset())
    runner = _runner(tmp_path, nn.Linear(2, 2))
    with pytest.raises(AttributeError, match='needs a prototype model'):
        hook.before_train(runner)


def test_registered_and_interval_checked():
    hook = HOOKS.build(dict(type='PrototypeAssignmentHook', dataset=[],
                            interval=3))
    assert isinstance(hook, PrototypeAssignmentHook) and hook.interval == 3
    with pytest.raises(ValueError, match='interval must be an int >= 1'):
        PrototypeAssignmentHook([], interval=0)
