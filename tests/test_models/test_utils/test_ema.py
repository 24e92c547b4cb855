"""LinearMomentumEMA: MSN's linear momentum schedule, resume, errors, the
fused update (bit-identical, no host sync)."""
import copy

import pytest
import torch
from mmengine.logging import MessageHub
from torch import nn

from pmsn_mm.models.utils import LinearMomentumEMA
from tests._profiling import rule_failure
from tests._profiling.op_counter import OpCounter, assert_host_syncs


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


# --- one fused update per step, no host sync (issue 26) -------------------


class _Net(nn.Module):
    """Parameters of several shapes plus BatchNorm buffers (float running
    statistics and the int64 ``num_batches_tracked``)."""

    def __init__(self, dtype):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 3)
        self.to(dtype)


def _perturb(model, scale):
    with torch.no_grad():
        for t in model.state_dict(keep_vars=True).values():
            if t.is_floating_point():
                t.add_(scale * torch.randn_like(t))
            else:
                t.add_(1)


def _reference_update(avg, online, weight, update_buffers):
    """The update before it was fused, tensor by tensor (mmengine's
    ``update_parameters`` loop with ``avg_func``): ``avg.lerp_(src, w)``
    for every floating-point averaged tensor, with ``w = 1 - m`` (MSN's
    ``m * target + (1 - m) * online``); the buffers copied unless they
    are averaged (then the non-floating ones are left alone)."""
    if update_buffers:
        src = online.state_dict()
        for key, a in avg.state_dict().items():
            if a.is_floating_point():
                a.lerp_(src[key], weight)
        return
    src = dict(online.named_parameters())
    for key, a in avg.named_parameters():
        a.detach().lerp_(src[key].detach(), weight)
    for a, s in zip(avg.buffers(), online.buffers()):
        a.copy_(s)


@pytest.mark.parametrize('update_buffers', [False, True])
def test_fused_update_is_bit_identical_to_the_per_tensor_update_float64(
        update_buffers):
    torch.manual_seed(0)
    online = _Net(torch.float64)
    ema = LinearMomentumEMA(online, momentum=0.3, end_momentum=0.05,
                            schedule_scale=1.0, max_iters=5,
                            update_buffers=update_buffers)
    ema.sync_from(online)
    reference = copy.deepcopy(ema.module)
    for step in range(7):  # past the end of the schedule
        _perturb(online, 0.5)
        ema.update_parameters(online)
        weight = 0.3 + (0.05 - 0.3) * min(1.0, step / 5)
        assert ema.current_momentum == weight
        with torch.no_grad():
            _reference_update(reference, online, weight, update_buffers)
        for (key, ours), theirs in zip(ema.module.state_dict().items(),
                                       reference.state_dict().values()):
            assert torch.equal(ours, theirs), f'{key}, step {step}'
    assert ema.steps.item() == ema.num_updates == 7
    # the int buffer: copied, or left alone when buffers are averaged
    tracked = ema.module.bn.num_batches_tracked.item()
    assert tracked == (0 if update_buffers else 7)


@pytest.mark.parametrize('dtype, tol', [(torch.float64, 1e-15),
                                        (torch.float32, 1e-6)])
def test_fused_update_is_official_msn_average_within_round_off(dtype, tol):
    """msn_train.py: ``param_k.data.mul_(m).add_((1.-m) * param_q)``."""
    torch.manual_seed(0)
    online = _Net(dtype)
    ema = LinearMomentumEMA(online, momentum=0.004, end_momentum=0.0,
                            max_iters=4)
    ema.sync_from(online)
    target = {k: v.clone() for k, v in ema.module.named_parameters()}
    for step in range(4):
        _perturb(online, 0.1)
        m = 0.996 + 0.004 * step / (1.25 * 4)  # MSN's target momentum
        ema.update_parameters(online)
        for key, q in online.named_parameters():
            target[key].mul_(m).add_((1. - m) * q.detach())
            torch.testing.assert_close(
                dict(ema.module.named_parameters())[key], target[key],
                rtol=tol, atol=tol, msg=f'{key}, step {step}')
        for a, s in zip(ema.module.buffers(), online.buffers()):
            assert torch.equal(a, s)  # buffers copied


def _vit_ema(num_layers):
    from mmpretrain.models import VisionTransformer
    torch.manual_seed(0)
    vit = VisionTransformer(
        arch=dict(embed_dims=16, num_layers=num_layers, num_heads=2,
                  feedforward_channels=32),
        img_size=16, patch_size=4)
    return vit, LinearMomentumEMA(vit, momentum=0.004, end_momentum=0.0,
                                  max_iters=100)


def test_update_is_a_few_ops_without_host_sync_whatever_the_depth():
    """Before: 2 detach + 1 lerp_ + 1 device read of ``steps`` per
    parameter (661 ops, 162 host syncs for the ViT-S PMSN target)."""
    counts = []
    for num_layers in (2, 8):
        vit, ema = _vit_ema(num_layers)
        ema.update_parameters(vit)
        with OpCounter() as counter:
            ema.update_parameters(vit)
        assert_host_syncs(counter, what=f'the EMA update, {num_layers} '
                          'layers')
        assert counter.ops <= 20, counter.op_names
        assert counter.op_names['_foreach_lerp_'] == 1
        counts.append((counter.ops, sum(1 for _ in vit.parameters())))
    (ops_small, params_small), (ops_big, params_big) = counts
    assert params_big > params_small + 50 and ops_big == ops_small


def test_steps_is_read_once_after_a_load_then_never():
    """``steps`` stays the checkpointed count; after a (resume) load the
    host counter is re-read from it once, on first use."""
    from mmengine.runner.checkpoint import load_state_dict
    vit, ema = _vit_ema(2)
    for _ in range(3):
        ema.update_parameters(vit)
    assert ema.steps.item() == 3
    for load in (lambda m, sd: m.load_state_dict(sd), load_state_dict):
        _, resumed = _vit_ema(2)
        load(resumed, ema.state_dict())
        counts = []
        for _ in range(2):
            with OpCounter() as counter:
                resumed.update_parameters(vit)
            counts.append(counter.op_names['_local_scalar_dense'])
        # the resynchronisation of the host counter (an allowed read,
        # once after a load), then none
        assert counts == [1, 0], rule_failure(
            f'reads of steps in 2 updates after a load: {counts}')
        assert resumed.steps.item() == resumed.num_updates == 5
        assert resumed.current_momentum == resumed.momentum_at(4)


def test_interval_counts_on_the_host():
    online = nn.Linear(3, 2)
    ema = LinearMomentumEMA(online, momentum=0.5, end_momentum=0.5,
                            interval=2)
    ema.sync_from(online)
    weights = []
    for _ in range(4):
        with torch.no_grad():
            online.weight.add_(1.0)
        ema.update_parameters(online)
        weights.append(ema.module.weight.detach().clone())
    assert torch.equal(weights[0], weights[1])  # update 1 skipped
    assert torch.equal(weights[2], weights[3])  # update 3 skipped
    assert not torch.equal(weights[1], weights[2])
    assert ema.steps.item() == 4
