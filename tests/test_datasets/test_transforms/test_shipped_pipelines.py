"""Every pipeline of every shipped config, on the awkward files, many draws.

The class of bug that broke the colour jitter (mmcv relying on uint8
wrap-around that numpy >= 2 refuses) fires only for some random draws, so
each distinct pipeline runs 12 times on each awkward image, with every
``prob`` forced to 1 (each random branch taken) and numpy's overflow and
invalid-value warnings turned into errors.
"""
import copy
import json
import os.path as osp

import numpy as np
import pytest
from mmengine.config import Config
from mmengine.dataset import Compose
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets.sample_data import make_sample_data
from tests._config_runs import RUNNABLE

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

DRAWS = 12


def _datasets(dataset):
    """The dataset configs inside a (wrapped) dataset config."""
    if dataset is None:
        return []
    inner = [dataset.get(k) for k in ('memory', 'query', 'dataset')]
    found = [d for part in inner if part for d in _datasets(part)]
    return found + ([dataset] if 'pipeline' in dataset else [])


def _forced(transforms):
    """A copy with every ``prob`` set to 1."""
    out = copy.deepcopy(transforms)
    stack = list(out)
    while stack:
        t = stack.pop()
        if isinstance(t, dict):
            if 'prob' in t and isinstance(t['prob'], (int, float)):
                t['prob'] = 1.0
            stack.extend(t.values())
        elif isinstance(t, (list, tuple)):
            stack.extend(t)
    return out


def _shipped_pipelines():
    """Distinct pipelines of the configs: [(pipeline, dataset config, name of
    a config using it)]."""
    found = {}
    for path in RUNNABLE:
        cfg = Config.fromfile(path)
        for name in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
            loader = cfg.get(name)
            for dataset in _datasets(loader.dataset if loader else None):
                pipeline = [t.to_dict() if hasattr(t, 'to_dict') else t
                            for t in dataset.pipeline]
                key = json.dumps(pipeline, sort_keys=True, default=str)
                found.setdefault(
                    key, (pipeline, dataset.to_dict(), osp.basename(path)))
    return list(found.values())


PIPELINES = _shipped_pipelines()


@pytest.fixture(scope='module')
def sample_root(tmp_path_factory):
    root = tmp_path_factory.mktemp('awkward')
    make_sample_data(str(root / 'data'), ['imagenet', 'cifar100', 'cifar10',
                                          'mnist'])
    return root


def _awkward_files(root):
    data = osp.join(root, 'data', 'imagenet')
    with open(osp.join(data, 'meta', 'train.txt')) as f:
        lines = [line.split()[0] for line in f]
    last = {}
    for rel in lines:  # the last image of each class is the awkward one
        last[rel.split('/')[0]] = rel
    return [dict(img_path=osp.join(data, 'train', rel))
            for rel in last.values()]


def _in_memory_samples(dataset):
    """Two data infos of an in-memory dataset (toy set, CIFAR)."""
    init_default_scope('mmpretrain')
    dataset = dict(dataset, pipeline=[])
    if dataset['type'] == 'PowerLawOverlayDataset':
        dataset['num_samples'] = 4
    built = DATASETS.build(dataset)
    return [built.get_data_info(i) for i in range(2)]


def test_the_pipelines_cover_the_shipped_transforms():
    types = {t['type'] for p, _, _ in PIPELINES for t in p}
    for expected in ('CheckedLoadImageFromFile', 'MultiView', 'PackInputs',
                     'RandomResizedCrop', 'ResizeEdge', 'Resize'):
        assert expected in types, expected
    nested = json.dumps([p for p, _, _ in PIPELINES])
    for expected in ('ModuloHueColorJitter', 'RandomGrayscale', 'GaussianBlur',
                     'Solarize', 'RandomFlip', 'BEiTMaskGenerator'):
        assert expected in nested, expected


@pytest.mark.parametrize('pipeline, dataset, source', PIPELINES,
                         ids=[f'{i}-{s}' for i, (_, _, s) in
                              enumerate(PIPELINES)])
def test_pipeline_survives_awkward_images_and_all_draws(
        pipeline, dataset, source, sample_root, monkeypatch):
    monkeypatch.chdir(sample_root)
    init_default_scope('mmpretrain')
    compose = Compose(_forced(pipeline))
    loads = pipeline[0]['type'] == 'CheckedLoadImageFromFile'
    inputs = _awkward_files(sample_root) if loads else _in_memory_samples(
        dataset)
    np.random.seed(0)
    with np.errstate(over='raise', invalid='raise', divide='raise'):
        for draw in range(DRAWS):
            for item in inputs:
                out = compose(dict(item, sample_idx=draw))
                assert out is not None and 'inputs' in out
