"""tools/train.py flags that change the config: --auto-scale-lr."""
import importlib.util
import os.path as osp

import pytest
from mmengine.config import Config

from tests._configs import REPO, write_config


def _train_tool():
    spec = importlib.util.spec_from_file_location(
        'tool_train_flags', osp.join(REPO, 'tools', 'train.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_auto_scale_lr_without_a_base_batch_size_names_the_config(tmp_path):
    # the tiny classifier sets none; its runner (PMSNRunner, from
    # default_runtime) refuses it before building anything
    config = write_config(tmp_path)
    train = _train_tool()
    with pytest.raises(ValueError) as info:
        train.main([config, '--auto-scale-lr', '--work-dir',
                    str(tmp_path / 'work')])
    assert str(info.value).startswith(
        f'--auto-scale-lr: {config} sets no auto_scale_lr.base_batch_size '
        "(got auto_scale_lr={'enable': True})")


def test_auto_scale_lr_is_written_into_the_config(tmp_path):
    """The old flag wrote into a copy when the config had no auto_scale_lr
    and into the config otherwise; now it is set or refused."""
    config = write_config(
        tmp_path, 'auto_scale_lr = dict(base_batch_size=16)\n', 'base.py')
    train = _train_tool()
    args = train.parse_args([config, '--auto-scale-lr'])
    cfg = train.merge_args(Config.fromfile(config), args)
    assert cfg.auto_scale_lr == dict(base_batch_size=16, enable=True)
    plain = train.merge_args(Config.fromfile(config),
                             train.parse_args([config]))
    assert 'enable' not in plain.auto_scale_lr
