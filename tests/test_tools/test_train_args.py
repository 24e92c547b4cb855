"""tools/train.py and tools/test.py flags map onto the config as documented."""
import importlib.util
import os.path as osp

import pytest
from mmengine.config import Config

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


def test_amp_flag_sets_the_wrapper_and_its_dtype(tmp_path):
    """--amp sets optim_wrapper.type and dtype, nothing chosen later (the
    flag's other cases: tests/test_engine/test_precision.py)."""
    cfg_path = write_config(tmp_path)
    cfg = train.merge_args(
        Config.fromfile(cfg_path), train.parse_args([cfg_path, '--amp']))
    assert cfg.optim_wrapper.type == 'DeviceAwareAmpOptimWrapper'
    assert cfg.optim_wrapper.dtype == 'bfloat16'
    assert 'loss_scale' not in cfg.optim_wrapper


def test_amp_flag_refuses_other_wrappers(tmp_path):
    cfg_path = write_config(tmp_path)
    args = train.parse_args([cfg_path, '--amp'])
    cfg = Config.fromfile(cfg_path)
    cfg.optim_wrapper.type = 'ApexOptimWrapper'
    with pytest.raises(ValueError, match='--amp sets optim_wrapper.type='
                       "'DeviceAwareAmpOptimWrapper' and works with "
                       'optim_wrapper.type OptimWrapper, AmpOptimWrapper, '
                       'DeviceAwareAmpOptimWrapper, not the configured '
                       "'ApexOptimWrapper'"):
        train.merge_args(cfg, args)


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
