"""The precision is written in the config: one amp config trains in the
same autocast dtype under ``PMSNRunner``, mmengine's own ``Runner`` and
mmpretrain's ``tools/train.py``; ``--amp`` sets exactly the wrapper type
and the dtype; nothing rewrites mmengine's ``AmpOptimWrapper``."""
import importlib.util
import os.path as osp
import re
import sys
from typing import List, Optional, Tuple

import mmpretrain
import pytest
import torch
from mmengine.config import Config
from mmengine.optim import AmpOptimWrapper
from mmengine.runner import Runner
from mmpretrain.models.heads import LinearClsHead
from mmpretrain.registry import RUNNERS

import pmsn_mm.engine.optimizers.device_aware_amp_optimizer_wrapper as m
from pmsn_mm.config import ConfigValueError
from pmsn_mm.engine.optimizers import (AMP_DTYPES, DeviceAwareAmpOptimWrapper,
                                       check_amp_device, set_amp)
from pmsn_mm.engine.runners.pmsn_runner import PMSNRunner
from pmsn_mm.utils.refusal import refusal_message
from tests._config_runs import RUNNABLE, config_id
from tests._configs import REPO, TINY_CLASSIFIER, write_config

#: The tiny classifier as an amp config: the precision written in it.
AMP_TINY = TINY_CLASSIFIER + """
optim_wrapper.update(type='DeviceAwareAmpOptimWrapper', dtype='bfloat16')
train_cfg = dict(type='IterBasedTrainLoop', max_iters=1)
"""
#: mmengine's AMP wrapper, as mmpretrain's ``--amp`` sets it.
MMENGINE_AMP = TINY_CLASSIFIER + """
optim_wrapper.update(type='AmpOptimWrapper', loss_scale='dynamic')
"""


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train_tool = _load(osp.join(REPO, 'tools', 'train.py'), 'pmsn_train_tool')
MMPRETRAIN_TRAIN = osp.join(osp.dirname(mmpretrain.__file__), '.mim', 'tools',
                            'train.py')


@pytest.fixture
def autocast_seen(monkeypatch) -> List[Tuple[Optional[torch.dtype],
                                             torch.dtype]]:
    """Each forward of the classifier head during training: the autocast
    dtype in effect (None without autocast) and the dtype of its linear
    layer's output."""
    seen = []
    forward = LinearClsHead.forward

    def spy(self, feats):
        out = forward(self, feats)
        device = out.device.type
        seen.append((torch.get_autocast_dtype(device)
                     if torch.is_autocast_enabled(device) else None,
                     out.dtype))
        return out

    monkeypatch.setattr(LinearClsHead, 'forward', spy)
    return seen


def _pmsn_runner(config: str, work_dir: str, monkeypatch) -> None:
    cfg = Config.fromfile(config)
    cfg.work_dir = work_dir
    runner = RUNNERS.build(cfg)  # the config's runner_type
    assert type(runner) is PMSNRunner
    runner.train()


def _mmengine_runner(config: str, work_dir: str, monkeypatch) -> None:
    cfg = Config.fromfile(config)  # custom_imports=dict(imports=['pmsn_mm'])
    assert cfg.custom_imports.imports == ['pmsn_mm']
    cfg.work_dir = work_dir
    cfg.pop('runner_type')  # mmengine's own Runner
    runner = Runner.from_cfg(cfg)
    assert type(runner) is Runner
    runner.train()


def _mmpretrain_tool(config: str, work_dir: str, monkeypatch) -> None:
    assert osp.isfile(MMPRETRAIN_TRAIN)
    tool = _load(MMPRETRAIN_TRAIN, 'mmpretrain_train_tool')
    monkeypatch.setattr(sys, 'argv',
                        ['train.py', config, '--work-dir', work_dir])
    tool.main()


def _pmsn_tool(config: str, work_dir: str, monkeypatch) -> None:
    train_tool.main([config, '--work-dir', work_dir])


LAUNCHERS = dict(pmsn_runner=_pmsn_runner, mmengine_runner=_mmengine_runner,
                 mmpretrain_tool=_mmpretrain_tool, pmsn_tool=_pmsn_tool)


@pytest.mark.parametrize('launcher', sorted(LAUNCHERS))
def test_the_config_decides_the_autocast_dtype_under_any_launcher(
        tmp_path, monkeypatch, autocast_seen, launcher):
    """One training step of the same config: bfloat16 autocast (the
    config's ``dtype``) on any machine and under any launcher. (A config
    file name per launcher: mmengine reuses a logger of the same name.)"""
    config = write_config(tmp_path, AMP_TINY, f'amp_{launcher}.py')
    LAUNCHERS[launcher](config, str(tmp_path / 'work'), monkeypatch)
    assert autocast_seen == [(torch.bfloat16, torch.bfloat16)]


@pytest.mark.parametrize(
    'path', [p for p in RUNNABLE if '-amp-' in osp.basename(p)],
    ids=config_id)
def test_the_shipped_amp_configs_write_their_precision(path):
    wrapper = Config.fromfile(path).optim_wrapper
    assert wrapper.type == 'DeviceAwareAmpOptimWrapper'
    assert wrapper.dtype == 'bfloat16'


# ---------------------------------------------------------------- --amp
@pytest.mark.parametrize('argv,dtype', [(['--amp'], 'bfloat16'),
                                        (['--amp', 'bfloat16'], 'bfloat16'),
                                        (['--amp', 'float16'], 'float16')])
def test_amp_flag_sets_exactly_the_wrapper_and_its_dtype(
        tmp_path, monkeypatch, argv, dtype):
    monkeypatch.setattr(m, 'amp_device_available', lambda: True)  # float16
    config = write_config(tmp_path)
    plain = Config.fromfile(config)
    cfg = train_tool.merge_args(Config.fromfile(config),
                                train_tool.parse_args([config, *argv]))
    assert cfg.optim_wrapper.to_dict() == dict(
        plain.optim_wrapper.to_dict(), type='DeviceAwareAmpOptimWrapper',
        dtype=dtype)
    assert 'type' not in plain.optim_wrapper  # OptimWrapper, mmengine's
    without = train_tool.merge_args(Config.fromfile(config),
                                    train_tool.parse_args([config]))
    cfg.optim_wrapper = without.optim_wrapper  # and nothing else changed
    assert cfg.to_dict() == without.to_dict()


def test_without_amp_flag_the_config_keeps_its_wrapper(tmp_path):
    config = write_config(tmp_path, AMP_TINY)
    cfg = train_tool.merge_args(Config.fromfile(config),
                                train_tool.parse_args([config]))
    assert cfg.optim_wrapper.type == 'DeviceAwareAmpOptimWrapper'
    assert cfg.optim_wrapper.dtype == 'bfloat16'


def test_amp_flag_offers_the_two_dtypes_only(tmp_path, capsys):
    config = write_config(tmp_path)
    with pytest.raises(SystemExit):
        train_tool.parse_args([config, '--amp', 'float32'])
    err = capsys.readouterr().err  # (the quoting depends on Python)
    assert "argument --amp: invalid choice: 'float32' (choose from " in err
    assert set(re.findall(r'\bb?float\d+\b', err)) == {
        'bfloat16', 'float16', 'float32'}
    assert AMP_DTYPES == ('bfloat16', 'float16')


@pytest.mark.parametrize('kind,kept', [
    ('OptimWrapper', {}),
    ('AmpOptimWrapper', dict(loss_scale=512.0)),
    ('DeviceAwareAmpOptimWrapper', dict(loss_scale='dynamic',
                                        dtype='float16')),
])
def test_set_amp_converts_the_wrappers_it_names(monkeypatch, kind, kept):
    monkeypatch.setattr(m, 'amp_device_available', lambda: False)
    optimizer = dict(type='SGD', lr=0.1)
    cfg = Config(dict(optim_wrapper=dict(type=kind, optimizer=optimizer,
                                         **kept)))
    set_amp(cfg, 'bfloat16')
    assert cfg.optim_wrapper.to_dict() == dict(
        kept, type='DeviceAwareAmpOptimWrapper', dtype='bfloat16',
        optimizer=optimizer)


def test_set_amp_refuses_a_wrapper_it_cannot_convert(tmp_path):
    config = write_config(tmp_path)
    cfg = Config.fromfile(config)
    cfg.optim_wrapper.type = 'ApexOptimWrapper'
    with pytest.raises(ValueError) as info:
        train_tool.merge_args(cfg, train_tool.parse_args([config, '--amp']))
    assert str(info.value) == (
        "--amp sets optim_wrapper.type='DeviceAwareAmpOptimWrapper' and works"
        ' with optim_wrapper.type OptimWrapper, AmpOptimWrapper, '
        "DeviceAwareAmpOptimWrapper, not the configured 'ApexOptimWrapper'.")
    assert cfg.optim_wrapper.type == 'ApexOptimWrapper'
    assert refusal_message(info.value) == str(info.value)


def test_set_amp_refuses_float16_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(m, 'amp_device_available', lambda: False)
    config = write_config(tmp_path)
    cfg = Config.fromfile(config)
    with pytest.raises(ValueError) as info:
        train_tool.merge_args(
            cfg, train_tool.parse_args([config, '--amp', 'float16']))
    assert str(info.value) == (
        '--amp float16: float16 autocast needs a GPU (its loss scaler runs '
        'on an accelerator only) and none is available; on the CPU use '
        '--amp bfloat16.')
    assert 'type' not in cfg.optim_wrapper  # not clamped to bfloat16


def test_set_amp_checks_its_arguments():
    cfg = Config(dict(optim_wrapper=dict(optimizer=dict(type='SGD'))))
    with pytest.raises(ValueError, match=r"^--amp must be one of bfloat16, "
                       r"float16, but is 'fp16'\.$"):
        set_amp(cfg, 'fp16')
    with pytest.raises(ValueError, match='^amp: the config has no '
                       'optim_wrapper to run in mixed precision.$'):
        set_amp(Config(dict()), option='amp')


# ------------------------------------------- mmengine's AmpOptimWrapper
def test_pmsn_runner_keeps_mmengines_amp_wrapper(tmp_path, monkeypatch):
    """``AmpOptimWrapper`` is built as mmengine builds it (float16 with a
    scaler, ``dtype=None``) where an accelerator is (a stand-in here) and
    refused in one line where none is: never rewritten."""
    cfg = Config.fromfile(write_config(tmp_path, MMENGINE_AMP))
    cfg.work_dir = str(tmp_path / 'work')
    runner = RUNNERS.build(cfg)
    assert runner.optim_wrapper.type == 'AmpOptimWrapper'  # as written
    monkeypatch.setattr(m, 'amp_device_available', lambda: False)
    with pytest.raises(ConfigValueError) as info:
        runner.build_optim_wrapper(runner.optim_wrapper)
    message = refusal_message(info.value)
    assert message == str(info.value) and '\n' not in message
    assert message.startswith("optim_wrapper.type='AmpOptimWrapper' ")
    assert "use optim_wrapper.type='DeviceAwareAmpOptimWrapper' with " \
        "dtype='bfloat16'" in message
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(m, 'amp_device_available', lambda: True)
    wrapper = runner.build_optim_wrapper(runner.optim_wrapper)
    assert type(wrapper) is AmpOptimWrapper
    assert wrapper.cast_dtype is None and wrapper.loss_scaler.is_enabled()


def test_pmsn_runner_refuses_mmengines_amp_wrapper_on_a_cpu_run(
        tmp_path, monkeypatch):
    """The refusal of a whole run, as a user meets it (one line; the work
    dir is left as it was)."""
    monkeypatch.setattr(m, 'amp_device_available', lambda: False)
    cfg = Config.fromfile(write_config(tmp_path, MMENGINE_AMP))
    cfg.work_dir = str(tmp_path / 'work')
    runner = RUNNERS.build(cfg)
    with pytest.raises(ConfigValueError, match='^optim_wrapper.type='):
        runner.train()
    assert not osp.exists(cfg.work_dir)


@pytest.mark.skipif(m.amp_device_available(), reason='checks a CPU')
def test_mmengines_runner_refuses_it_on_a_cpu_as_before(tmp_path):
    cfg = Config.fromfile(write_config(tmp_path, MMENGINE_AMP))
    cfg.work_dir = str(tmp_path / 'work')
    cfg.pop('runner_type')
    runner = Runner.from_cfg(cfg)
    with pytest.raises(AssertionError, match='only available training'):
        runner.build_optim_wrapper(runner.optim_wrapper)


@pytest.mark.parametrize('optim_wrapper', [
    dict(type='OptimWrapper'),
    dict(type='DeviceAwareAmpOptimWrapper', dtype='bfloat16'),
    DeviceAwareAmpOptimWrapper,  # not a dict: not a config to check
])
def test_check_amp_device_passes_other_wrappers(monkeypatch, optim_wrapper):
    monkeypatch.setattr(m, 'amp_device_available', lambda: False)
    assert check_amp_device(optim_wrapper) is None
    with pytest.raises(ConfigValueError):
        check_amp_device(dict(type='mmengine.AmpOptimWrapper'))
