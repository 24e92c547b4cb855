"""DeviceAwareAmpOptimWrapper: mmengine's AmpOptimWrapper on a GPU, bfloat16
autocast without a loss scaler on the CPU."""
import pytest
import torch
import torch.nn as nn
from mmengine.config import Config
from mmengine.optim import AmpOptimWrapper, build_optim_wrapper
from mmengine.registry import init_default_scope

from pmsn_mm.engine.optimizers import (DeviceAwareAmpOptimWrapper,
                                       amp_device_available)
from pmsn_mm.utils.recipe import _optim_wrapper_cfg

cpu_only = pytest.mark.skipif(amp_device_available(),
                              reason='checks the CPU path')


def _build(model: nn.Module, **kwargs) -> DeviceAwareAmpOptimWrapper:
    init_default_scope('mmpretrain')
    return build_optim_wrapper(model, dict(
        type='DeviceAwareAmpOptimWrapper', loss_scale='dynamic',
        optimizer=dict(type='SGD', lr=0.1), **kwargs))


@cpu_only
def test_cpu_trains_under_bf16_autocast_without_a_scaler(monkeypatch):
    import pmsn_mm.engine.optimizers.device_aware_amp_optimizer_wrapper as m
    said = []  # the current logger's handlers depend on earlier tests
    monkeypatch.setattr(m, 'print_log', lambda msg, **kw: said.append(msg))
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    wrapper = _build(model)
    assert isinstance(wrapper, AmpOptimWrapper)
    assert wrapper.on_cpu and wrapper.cast_dtype == torch.bfloat16
    assert not wrapper.loss_scaler.is_enabled()
    assert 'bfloat16 autocast on the CPU' in ' '.join(said)
    before = model.weight.detach().clone()
    with wrapper.optim_context(model):
        assert torch.is_autocast_enabled('cpu')
        assert torch.get_autocast_dtype('cpu') == torch.bfloat16
        out = model(torch.randn(5, 4))
        assert out.dtype == torch.bfloat16
        loss = out.float().square().mean()
    assert not torch.is_autocast_enabled('cpu')
    wrapper.update_params(loss)
    assert model.weight.dtype == torch.float32
    assert torch.isfinite(model.weight).all()
    assert not torch.equal(model.weight, before)  # a plain, unscaled step


@cpu_only
def test_cpu_clips_and_accumulates_like_optim_wrapper():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    wrapper = _build(model, clip_grad=dict(max_norm=1e-3),
                     accumulative_counts=2)
    x = torch.randn(8, 4)
    for _ in range(2):
        with wrapper.optim_context(model):
            loss = model(x).float().sum() * 100
        wrapper.update_params(loss)
    assert torch.isfinite(model.weight).all()
    assert wrapper._inner_count == 2


@cpu_only
def test_cpu_state_dict_has_no_scaler_and_loads_gpu_state():
    model = nn.Linear(4, 3)
    wrapper = _build(model)
    state = wrapper.state_dict()
    assert 'loss_scaler' not in state and 'param_groups' in state
    # a GPU run's checkpoint: its scaler state is dropped on the CPU
    gpu_state = dict(state, loss_scaler=dict(scale=65536.0,
                                             growth_factor=2.0))
    wrapper.load_state_dict(gpu_state)
    assert wrapper.optimizer.param_groups[0]['lr'] == 0.1


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs CUDA')
def test_cuda_is_mmengine_amp_optim_wrapper():
    model = nn.Linear(4, 3).cuda()
    wrapper = _build(model)
    assert not wrapper.on_cpu and wrapper.loss_scaler.is_enabled()
    with wrapper.optim_context(model):
        assert model(torch.randn(2, 4, device='cuda')).dtype == torch.float16
    assert 'loss_scaler' in wrapper.state_dict()


def test_recipe_resolves_it_as_the_plain_optimizer():
    cfg = Config(dict(optim_wrapper=dict(
        type='DeviceAwareAmpOptimWrapper', loss_scale='dynamic',
        optimizer=dict(type='SGD', lr=0.1))))
    assert _optim_wrapper_cfg(cfg) == dict(
        type='OptimWrapper', optimizer=dict(type='SGD', lr=0.1))
