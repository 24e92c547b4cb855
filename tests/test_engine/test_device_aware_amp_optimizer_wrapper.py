"""DeviceAwareAmpOptimWrapper: the autocast dtype the config writes, on a
GPU and on the CPU alike (bfloat16 without a loss scaler, float16 with
mmengine's scaler on a GPU only); no dtype is chosen for the config."""
import pytest
import torch
import torch.nn as nn
from mmengine.config import Config
from mmengine.optim import AmpOptimWrapper, build_optim_wrapper
from mmengine.registry import init_default_scope

import pmsn_mm.engine.optimizers.device_aware_amp_optimizer_wrapper as m
from pmsn_mm.engine.optimizers import (DeviceAwareAmpOptimWrapper,
                                       amp_device_available)
from tests._recipes import plain_optim_wrapper_cfg

cpu_only = pytest.mark.skipif(amp_device_available(),
                              reason='checks the CPU path')


def _build(model: nn.Module, dtype='bfloat16',
           **kwargs) -> DeviceAwareAmpOptimWrapper:
    init_default_scope('mmpretrain')
    return build_optim_wrapper(model, dict(
        type='DeviceAwareAmpOptimWrapper', loss_scale='dynamic',
        optimizer=dict(type='SGD', lr=0.1), dtype=dtype, **kwargs))


@pytest.mark.parametrize('dtype', [None, 'float32', 'fp16', torch.float32])
def test_the_dtype_must_be_written_as_bfloat16_or_float16(dtype):
    with pytest.raises(ValueError) as info:
        _build(nn.Linear(4, 3), dtype=dtype)
    assert str(info.value) == (
        "DeviceAwareAmpOptimWrapper: optim_wrapper.dtype must be one of "
        "'bfloat16', 'float16' (the autocast dtype, written in the config), "
        f'but is {dtype!r}.')


def test_a_torch_dtype_names_the_same_precision():
    assert _build(nn.Linear(4, 3), dtype=torch.bfloat16).cast_dtype is \
        torch.bfloat16


def test_float16_is_refused_without_a_gpu(monkeypatch):
    monkeypatch.setattr(m, 'amp_device_available', lambda: False)
    with pytest.raises(ValueError, match="^DeviceAwareAmpOptimWrapper: "
                       r"optim_wrapper.dtype='float16' needs a GPU .* on "
                       r"the CPU use dtype='bfloat16'\.$"):
        _build(nn.Linear(4, 3), dtype='float16')


@cpu_only
def test_cpu_trains_under_bf16_autocast_without_a_scaler(monkeypatch):
    said = []  # the current logger's handlers depend on earlier tests
    monkeypatch.setattr(m, 'print_log', lambda msg, **kw: said.append(msg))
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    wrapper = _build(model)
    assert isinstance(wrapper, AmpOptimWrapper)
    assert wrapper.on_cpu and wrapper.cast_dtype == torch.bfloat16
    assert not wrapper.loss_scaler.is_enabled()
    assert said == ['DeviceAwareAmpOptimWrapper: no GPU, bfloat16 autocast '
                    "on the CPU without loss scaling (loss_scale='dynamic' "
                    'is not used).']
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


@pytest.fixture
def fake_cuda(monkeypatch):
    """CUDA reported available (the wrapper is only built, never run).

    Returns a setter of whether the device has native bfloat16 and the
    list of ``including_emulation`` arguments of each bfloat16 query (an
    emulating GPU, e.g. a V100, says True unless asked for native).
    """
    state = dict(bf16=True, asked=[])

    def bf16_supported(including_emulation: bool = True) -> bool:
        state['asked'].append(including_emulation)
        return state['bf16'] or including_emulation

    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'is_bf16_supported', bf16_supported)

    def set_bf16(bf16: bool) -> list:
        state['bf16'] = bf16
        return state['asked']

    return set_bf16


#: (native bf16 on the GPU, configured dtype) -> (autocast dtype, scaler):
#: the configured dtype runs whatever the GPU
CUDA_CASES = [
    (True, 'bfloat16', torch.bfloat16, False),
    (False, 'bfloat16', torch.bfloat16, False),
    (True, 'float16', torch.float16, True),
    (False, 'float16', torch.float16, True),
]


@pytest.mark.parametrize('bf16,dtype,cast,scaler', CUDA_CASES)
def test_cuda_dtype_and_scaler(fake_cuda, bf16, dtype, cast, scaler):
    fake_cuda(bf16)
    wrapper = _build(nn.Linear(4, 3), dtype=dtype)
    assert not wrapper.on_cpu
    assert wrapper.cast_dtype == cast
    assert wrapper.loss_scaler.is_enabled() is scaler
    state = wrapper.state_dict()
    assert ('loss_scaler' in state) is scaler
    if scaler:  # mmengine's dynamic scaler
        assert state['loss_scaler']['scale'] == 2.0**16
    else:  # a float16 run's checkpoint: its scaler state is not used
        wrapper.load_state_dict(dict(state, loss_scaler=dict(scale=8.0)))
        assert not wrapper.loss_scaler.is_enabled()


@pytest.mark.parametrize('native', [True, False])
def test_cuda_bf16_logs_that_loss_scale_is_unused(fake_cuda, monkeypatch,
                                                  native):
    """bfloat16 runs as written; a GPU that only emulates it (the native
    query, ``including_emulation=False``) gets one more sentence."""
    asked = fake_cuda(native)
    said = []
    monkeypatch.setattr(m, 'print_log', lambda msg, **kw: said.append(msg))
    assert _build(nn.Linear(4, 3)).cast_dtype is torch.bfloat16
    assert asked == [False]
    emulated = '' if native else (
        " This GPU emulates bfloat16 (slow); dtype='float16' runs float16 "
        'with loss scaling.')
    assert said == ['DeviceAwareAmpOptimWrapper: bfloat16 autocast without '
                    "loss scaling (loss_scale='dynamic' is not used)."
                    + emulated]


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs CUDA')
@pytest.mark.parametrize('dtype,scaler', [('bfloat16', False),
                                          ('float16', True)])
def test_cuda_autocasts_to_the_configured_dtype(dtype, scaler):
    model = nn.Linear(4, 3).cuda()
    wrapper = _build(model, dtype=dtype)
    assert not wrapper.on_cpu
    assert wrapper.loss_scaler.is_enabled() is scaler
    with wrapper.optim_context(model):
        out = model(torch.randn(2, 4, device='cuda'))
    assert out.dtype == getattr(torch, dtype)
    assert ('loss_scaler' in wrapper.state_dict()) is scaler


def test_recipe_resolves_it_as_the_plain_optimizer():
    cfg = Config(dict(optim_wrapper=dict(
        type='DeviceAwareAmpOptimWrapper', loss_scale='dynamic',
        dtype='bfloat16', optimizer=dict(type='SGD', lr=0.1))))
    assert plain_optim_wrapper_cfg(cfg) == dict(
        type='OptimWrapper', optimizer=dict(type='SGD', lr=0.1))
