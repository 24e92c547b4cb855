"""Sampler configs build; toy ones give batches with exactly K classes."""
import glob
import os.path as osp
import re
from unittest import mock

import numpy as np
import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from mmpretrain.registry import MODELS

from pmsn_mm.datasets.sample_data.layouts import write_imagenet, write_inat18
from tests._configs import CONFIGS

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

# the class-stratified (K study) and class-frequency (Table 4) configs
SAMPLER_CONFIGS = sorted(
    glob.glob(osp.join(CONFIGS, 'class_stratified', 'pmsn_*.py')) +
    glob.glob(osp.join(CONFIGS, 'class_stratified', 'cpu_study',
                       'pmsn_*.py')) +
    glob.glob(osp.join(CONFIGS, 'pmsn', '*frequency*.py')))


def _sample_set(dataset_type, root, num_classes, per_class):
    """Real (8 px) images of ``num_classes`` classes in the layout of the
    config's dataset: ImageNet folders + meta lists, or iNat18's JSON."""
    rng = np.random.default_rng(0)
    if dataset_type == 'INat18':
        return write_inat18(str(root / 'inat18'), rng, all_classes=False,
                            head_counts=[(c, per_class)
                                         for c in range(num_classes)],
                            long_side=(8, 8))
    return write_imagenet(str(root / 'imagenet'), rng,
                          train_counts=[per_class] * num_classes,
                          long_side=(8, 8), val_per_class=0, awkward=False)


def _loader_cfg(cfg, tmp_path):
    loader = cfg.train_dataloader.copy()
    loader.num_workers = 0
    loader.persistent_workers = False
    ds = loader.dataset
    if ds.type == 'PowerLawOverlayDataset':
        ds.num_samples = 600
        ds.pipeline = [dict(type='PackInputs',
                            meta_keys=('digit_label', 'background_label'))]
    else:
        # enough classes/images for K = 960 (1 per class) and K = 2 (480)
        k = (loader.get('batch_sampler') or {}).get('classes_per_batch')
        classes, per_class = (961, 2) if k == 960 else (10, 480)
        ds.data_root = _sample_set(ds.type, tmp_path, classes, per_class)
        ds.pipeline = []  # the samplers read labels, never images
    return loader


@pytest.mark.parametrize('path', SAMPLER_CONFIGS, ids=osp.basename)
def test_sampler_config_builds(path, tmp_path):
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(path)
    MODELS.build(cfg.model)
    # simulate rank 0 of the GPU count in the config name ({N}xb{B})
    world = int(re.search(r'_(\d+)xb\d+', osp.basename(path)).group(1))
    with mock.patch('pmsn_mm.datasets.samplers.class_aware_sampler.'
                    'get_dist_info', return_value=(0, world)), \
            mock.patch('pmsn_mm.datasets.samplers.class_stratified_sampler.'
                       'get_dist_info', return_value=(0, world)), \
            mock.patch('mmengine.dataset.sampler.get_dist_info',
                       return_value=(0, world)):
        loader = Runner.build_dataloader(_loader_cfg(cfg, tmp_path), seed=0)
    expected = cfg.train_dataloader.get('batch_sampler') or \
        cfg.train_dataloader.sampler
    sampler = loader.batch_sampler if 'batch_sampler' in \
        cfg.train_dataloader else loader.sampler
    assert type(sampler).__name__ == expected.type
    if hasattr(sampler, 'epoch_batches'):
        batches = sampler.epoch_batches()  # global batches
        labels = np.asarray(loader.dataset.get_gt_labels())
        k = expected.classes_per_batch
        assert batches.shape[1] == cfg.train_dataloader.batch_size * world
        for batch in batches[:20]:
            assert len(np.unique(labels[batch])) == k


@pytest.mark.parametrize('name, k', [
    ('pmsn_vit-mini-p4_1xb60-cpu-toy-class-balanced-k10_power-law-overlay.py',
     10),
    ('pmsn_vit-mini-p4_1xb60-cpu-toy-class-imbalanced-k2_power-law-overlay.py',
     2),
])
def test_toy_batches_hold_k_background_classes(name, k, tmp_path):
    """Through the real DataLoader: each batch has K backgrounds, 60/K each."""
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(
        osp.join(CONFIGS, 'class_stratified', 'cpu_study', name))
    loader = Runner.build_dataloader(_loader_cfg(cfg, tmp_path), seed=0)
    for i, batch in enumerate(loader):
        bg = np.array([s.background_label for s in batch['data_samples']])
        classes, counts = np.unique(bg, return_counts=True)
        assert len(classes) == k
        assert set(counts) == {60 // k}
        if i == 4:
            break
