"""tools/train.py and tools/test.py flags map onto the config as documented."""
import importlib.util
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from pmsn_mm.engine.runners.pmsn_runner import device_aware_amp
from tests._configs import REPO, write_config


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(
        f'tool_{name}', osp.join(REPO, 'tools', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train = _load_tool('train')
test_tool = _load_tool('test')


def test_train_flags(tmp_path):
    cfg_path = write_config(tmp_path)
    args = train.parse_args([
        cfg_path, '--work-dir', 'wd', '--resume', 'ckpt.pth',
        '--no-validate', '--cfg-options', 'train_cfg.max_iters=7',
        'model.head.num_classes=3'
    ])
    cfg = train.merge_args(Config.fromfile(cfg_path), args)
    assert cfg.work_dir == 'wd'
    assert cfg.resume is True and cfg.load_from == 'ckpt.pth'
    assert cfg.train_cfg.max_iters == 7
    assert cfg.model.head.num_classes == 3
    assert cfg.val_cfg is None and cfg.launcher == 'none'


def test_train_auto_resume_and_default_work_dir(tmp_path):
    cfg_path = write_config(tmp_path)
    cfg = train.merge_args(
        Config.fromfile(cfg_path), train.parse_args([cfg_path, '--resume']))
    assert cfg.resume is True and cfg.load_from is None
    assert cfg.work_dir == osp.join('./work_dirs', 'tiny')


def test_amp_flag_selects_the_device_aware_wrapper(tmp_path):
    """--amp sets mmengine's AmpOptimWrapper, as mmpretrain's --amp does;
    PMSNRunner runs it as DeviceAwareAmpOptimWrapper (mmengine's wrapper on
    a GPU, bf16 autocast on the CPU), so any tool's --amp gives one run."""
    cfg_path = write_config(tmp_path)
    cfg = train.merge_args(
        Config.fromfile(cfg_path), train.parse_args([cfg_path, '--amp']))
    assert cfg.optim_wrapper.type == 'AmpOptimWrapper'
    assert cfg.optim_wrapper.loss_scale == 'dynamic'
    assert device_aware_amp(cfg).startswith(
        'optim_wrapper AmpOptimWrapper runs as DeviceAwareAmpOptimWrapper')
    assert cfg.optim_wrapper.type == 'DeviceAwareAmpOptimWrapper'
    assert cfg.optim_wrapper.loss_scale == 'dynamic'
    assert device_aware_amp(cfg) is None  # once only


def test_amp_flag_refuses_other_wrappers(tmp_path):
    cfg_path = write_config(tmp_path)
    args = train.parse_args([cfg_path, '--amp'])
    cfg = Config.fromfile(cfg_path)
    cfg.optim_wrapper.type = 'ApexOptimWrapper'
    with pytest.raises(ValueError, match='--amp works with OptimWrapper'):
        train.merge_args(cfg, args)


@pytest.mark.skipif(torch.cuda.is_available(), reason='checks the CPU path')
def test_amp_optim_wrapper_falls_back_to_bf16_on_cpu(tmp_path):
    cfg_path = write_config(tmp_path)
    cfg = train.merge_args(Config.fromfile(cfg_path), train.parse_args(
        [cfg_path, '--cfg-options', 'optim_wrapper.type=AmpOptimWrapper']))
    note = device_aware_amp(cfg)
    assert cfg.optim_wrapper.type == 'DeviceAwareAmpOptimWrapper'
    assert note.endswith('(no CUDA device: bfloat16 autocast on the CPU).')


def test_test_tool_flags(tmp_path):
    cfg_path = write_config(tmp_path)
    args = test_tool.parse_args(
        [cfg_path, 'model.pth', '--launcher', 'pytorch', '--out', 'r.pkl'])
    cfg = Config.fromfile(cfg_path)
    cfg.test_evaluator = dict(type='Accuracy')
    cfg = test_tool.merge_args(cfg, args)
    assert cfg.load_from == 'model.pth' and cfg.launcher == 'pytorch'
    assert cfg.test_evaluator[-1] == dict(
        type='DumpResults', out_file_path='r.pkl')


def test_launcher_choices():
    with pytest.raises(SystemExit):
        train.parse_args(['x.py', '--launcher', 'ssh'])


def test_overwrite_flag():
    assert train.parse_args(['x.py', '--overwrite']).overwrite is True
    assert train.parse_args(['x.py']).overwrite is False
