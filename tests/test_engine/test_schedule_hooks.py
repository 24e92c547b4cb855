"""TargetMomentumHook / SharpenTemperatureHook: schedule, setters, errors."""
from types import SimpleNamespace
from unittest import mock

import pytest
from mmengine.logging import MessageHub
from mmengine.model import MMDistributedDataParallel

from pmsn_mm.engine.hooks import SharpenTemperatureHook, TargetMomentumHook


class _Model:

    def __init__(self):
        self.momentum = None
        self.temperature = None

    def set_target_momentum(self, m):
        self.momentum = m

    def set_sharpen_temperature(self, t):
        self.temperature = t


def _runner(model, cur_iter, max_iters):
    return SimpleNamespace(
        model=model, iter=cur_iter, max_iters=max_iters,
        message_hub=MessageHub.get_instance('schedule-hook-test'))


@pytest.mark.parametrize('cur_iter, expected', [
    (0, 0.996),
    (500, 0.996 + 0.004 * 500 / 1250),
    (1000, 0.996 + 0.004 * 1000 / 1250),  # end of run: 80% of the way
])
def test_momentum_is_linear_over_1_25_times_the_run(cur_iter, expected):
    hook = TargetMomentumHook()
    model = _Model()
    runner = _runner(model, cur_iter, 1000)
    hook.before_train_iter(runner, batch_idx=0)
    assert model.momentum == pytest.approx(expected, abs=1e-12)
    assert runner.message_hub.get_scalar(
        'train/target_momentum').current() == pytest.approx(expected)


def test_schedule_saturates_and_resumes_from_iter():
    hook = SharpenTemperatureHook(start=0.25, end=0.1, scale=1.0)
    assert hook.value_at(2000, 1000) == pytest.approx(0.1)
    # a resumed runner at iter 300 gets what the uninterrupted run had
    model = _Model()
    hook.before_train_iter(_runner(model, 300, 1000), batch_idx=0)
    assert model.temperature == pytest.approx(0.25 - 0.15 * 0.3)


def test_wrapped_model_is_reached_through_module():
    model = _Model()
    wrapper = mock.MagicMock(spec=MMDistributedDataParallel)
    wrapper.module = model
    with mock.patch(
            'pmsn_mm.engine.hooks.linear_schedule_hook.is_model_wrapper',
            return_value=True):
        TargetMomentumHook().before_train_iter(
            _runner(wrapper, 0, 10), batch_idx=0)
    assert model.momentum == pytest.approx(0.996)


def test_model_without_setter_is_a_clear_error():
    with pytest.raises(TypeError, match='set_target_momentum'):
        TargetMomentumHook().before_train_iter(
            _runner(object(), 0, 10), batch_idx=0)


@pytest.mark.parametrize('hook, kwargs, match', [
    (TargetMomentumHook, dict(start=1.2), 'momentum start'),
    (TargetMomentumHook, dict(end=-0.1), 'momentum end'),
    (TargetMomentumHook, dict(scale=0), 'scale'),
    (SharpenTemperatureHook, dict(start=0), 'temperature start'),
    (SharpenTemperatureHook, dict(end=float('nan')), 'temperature end'),
])
def test_bad_arguments(hook, kwargs, match):
    with pytest.raises(ValueError, match=match):
        hook(**kwargs)
