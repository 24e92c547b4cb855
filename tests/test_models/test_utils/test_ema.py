"""LinearMomentumEMA: MSN's linear momentum schedule, resume, errors."""
import pytest
import torch
from mmengine.logging import MessageHub
from torch import nn

from pmsn_mm.models.utils import LinearMomentumEMA


def _ema(**kwargs):
    torch.manual_seed(0)
    return LinearMomentumEMA(nn.Linear(3, 2), **kwargs)


@pytest.mark.parametrize('steps, expected', [
    (0, 0.996),
    (500, 0.996 + 0.004 * 500 / 1250),
    (1000, 0.996 + 0.004 * 1000 / 1250),  # end of run: 80% of the way
])
def test_momentum_is_linear_over_1_25_times_the_run(steps, expected):
    # MSN momentum 0.996 -> 1.0 is mmengine momentum 0.004 -> 0
    ema = _ema(momentum=0.004, end_momentum=0.0, max_iters=1000)
    assert 1 - ema.momentum_at(steps) == pytest.approx(expected, abs=1e-12)


def test_max_iters_comes_from_the_message_hub():
    hub = MessageHub.get_instance('linear-momentum-ema-test')
    hub.update_info('max_iters', 1000)
    ema = _ema(momentum=0.004, end_momentum=0.0)
    assert 1 - ema.momentum_at(500) == pytest.approx(0.996 + 0.0016)


def test_schedule_saturates_and_resumes_from_steps():
    # MSN momentum 0.25 -> 0.1 over exactly the run
    ema = _ema(momentum=0.75, end_momentum=0.9, schedule_scale=1.0,
               max_iters=1000)
    assert 1 - ema.momentum_at(2000) == pytest.approx(0.1)
    # a resumed model at update 300 gets what the uninterrupted run had
    online = nn.Linear(3, 2)
    ema.update_parameters(online)  # update 0 (averages, as every one)
    ema.steps.fill_(300)
    resumed = _ema(momentum=0.75, end_momentum=0.9, schedule_scale=1.0,
                   max_iters=1000)
    resumed.load_state_dict(ema.state_dict())
    assert resumed.steps.item() == 300
    old = resumed.module.weight.detach().clone()
    with torch.no_grad():
        online.weight.add_(1.0)
    resumed.update_parameters(online)
    m = 0.25 - 0.15 * 0.3  # MSN convention
    torch.testing.assert_close(resumed.module.weight,
                               m * old + (1 - m) * online.weight.detach())
    assert 1 - resumed.current_momentum == pytest.approx(m)
    assert resumed.steps.item() == 301


def test_sync_copies_then_every_update_averages():
    """MSN: the target starts as a copy (sync_from, not counted) and update
    0 already averages with m_0 (mmengine's EMA would copy again)."""
    ema = _ema(momentum=0.1, end_momentum=0.1)  # constant: no max_iters
    online = nn.Linear(3, 2)
    ema.sync_from(online)
    torch.testing.assert_close(ema.module.weight, online.weight)
    assert ema.steps.item() == 0
    old = ema.module.weight.detach().clone()
    with torch.no_grad():
        online.weight.mul_(2.0)
    ema.update_parameters(online)
    torch.testing.assert_close(ema.module.weight,
                               0.9 * old + 0.1 * online.weight.detach())
    assert ema.steps.item() == 1
    assert not any(p.requires_grad for p in ema.parameters())


def test_schedule_without_max_iters_is_a_clear_error():
    MessageHub.get_instance('linear-momentum-ema-no-max-iters')
    ema = _ema(momentum=0.004, end_momentum=0.0)
    with pytest.raises(RuntimeError, match="'max_iters' in the message hub"):
        ema.momentum_at(1)


@pytest.mark.parametrize('kwargs, match', [
    (dict(momentum=0.0), r'momentum must be in \(0, 1\)'),
    (dict(momentum=1.0), r'momentum must be in \(0, 1\)'),
    (dict(momentum=1.0), "mmengine convention: .* MSN's target momentum m "
     'is 1 - momentum'),
    (dict(end_momentum=1.0), r'end_momentum must be in \[0, 1\)'),
    (dict(end_momentum=-0.1), r'end_momentum must be in \[0, 1\)'),
    (dict(schedule_scale=0), r'schedule_scale must be in \(0, inf\)'),
    (dict(schedule_scale=float('nan')), 'schedule_scale'),
    (dict(max_iters=0), 'max_iters must be an int >= 1'),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _ema(**kwargs)
