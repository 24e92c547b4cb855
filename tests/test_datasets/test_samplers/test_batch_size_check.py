"""A stratified sampler and its dataloader agree on the batch size."""
import importlib.util
import os.path as osp

import numpy as np
import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import Runner

from pmsn_mm.datasets.samplers.batch_size_check import (
    sync_sampler_batch_size, takes_batch_size)
from tests._configs import REPO, TINY_PMSN, write_config


def _load_train_tool():
    spec = importlib.util.spec_from_file_location(
        'tool_train_batch_size', osp.join(REPO, 'tools', 'train.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mismatch_fails_at_start_up_naming_both_values(tmp_path):
    train = _load_train_tool()
    cfg = write_config(tmp_path, TINY_PMSN)
    with pytest.raises(ValueError) as info:
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--cfg-options',
            'train_dataloader.sampler.batch_size=4'
        ])
    assert str(info.value) == (
        'train_dataloader.sampler.batch_size=4 (ClassStratifiedSampler) '
        'differs from train_dataloader.batch_size=8: the sampler lays out '
        'batches of its own size and the dataloader would cut them at other '
        'places, mixing batches. Use the same value for both (or leave out '
        "train_dataloader.sampler.batch_size; tools/train.py then takes the "
        "dataloader's).")
    assert not osp.exists(tmp_path / 'work')  # nothing was built


def test_missing_sampler_batch_size_is_taken_from_the_dataloader(tmp_path):
    cfg = Config.fromfile(write_config(tmp_path, TINY_PMSN))
    del cfg.train_dataloader.sampler['batch_size']
    cfg.train_dataloader.batch_size = 6  # K=2 classes, 3 images each
    sync_sampler_batch_size(cfg)
    assert cfg.train_dataloader.sampler.batch_size == 6
    init_default_scope('mmpretrain')
    loader = Runner.build_dataloader(cfg.train_dataloader)
    labels = loader.dataset.get_gt_labels()
    for _, batch in zip(range(4), loader):
        idx = [s.sample_idx for s in batch['data_samples']]
        assert len(idx) == 6
        assert len(np.unique(labels[idx])) == 2


def test_samplers_without_batch_size_are_left_alone(tmp_path):
    cfg = Config(
        dict(
            train_dataloader=dict(
                batch_size=8,
                sampler=dict(type='ClassFrequencySampler', power=0.5)),
            val_dataloader=dict(
                batch_size=4, sampler=dict(type='DefaultSampler')),
            test_dataloader=dict(
                batch_size=4,
                sampler=dict(type='ClassStratifiedSampler',
                              classes_per_batch=2))))
    sync_sampler_batch_size(cfg)
    assert 'batch_size' not in cfg.train_dataloader.sampler
    assert 'batch_size' not in cfg.val_dataloader.sampler
    assert cfg.test_dataloader.sampler.batch_size == 4
    assert takes_batch_size('ClassStratifiedSampler')
    assert not takes_batch_size('ClassFrequencySampler')
    assert not takes_batch_size('NoSuchSampler')
