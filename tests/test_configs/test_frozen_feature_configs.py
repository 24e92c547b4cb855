"""kNN and low-shot logistic-regression benchmarks: settings of the paper's
evaluations (each also runs on sample files in test_every_config_runs.py)."""
import glob
import os.path as osp

import pytest
from mmengine.config import Config

from tests._configs import CONFIGS

BENCH = osp.join(CONFIGS, 'pmsn', 'benchmarks')
KNN = sorted(glob.glob(osp.join(BENCH, '*_knn-*.py')))
LOGREG = sorted(glob.glob(osp.join(BENCH, '*_logreg_*.py')))


def test_there_are_knn_and_logreg_benchmarks():
    names = {osp.basename(p) for p in KNN + LOGREG}
    for rep in ('vit-small-p16-lastcls', 'vit-base-p16-lastcls',
                'resnet50-pool2048'):
        assert f'{rep}_knn-k20_in1k.py' in names
        assert f'{rep}_logreg_in1k-1pct.py' in names
    assert 'vit-small-p16-lastcls_knn-k20_inat18.py' in names


@pytest.mark.parametrize('path', KNN + LOGREG, ids=osp.basename)
def test_benchmark_evaluates_a_frozen_encoder(path):
    cfg = Config.fromfile(path)
    assert cfg.get('train_dataloader') is None and cfg.get('train_cfg') is None
    assert cfg.test_cfg.type == 'FeatureTestLoop'
    assert cfg.model.type == 'ImageClassifier' and cfg.model.head is None
    assert cfg.model.backbone.init_cfg is None  # the test.py checkpoint
    if cfg.model.backbone.type == 'VisionTransformer':
        assert cfg.model.backbone.out_type == 'cls_token'
        assert cfg.model.backbone.final_norm is True
    dataset = cfg.test_dataloader.dataset
    assert dataset.type == 'KNNEvalDataset'
    memory, query = dataset.memory, dataset.query
    if memory.type == 'PowerLawOverlayDataset':  # the toy set: below
        return
    inat = 'inat18' in osp.basename(path)
    if memory.type == 'LowShotDataset':
        assert memory.list_file == 'data/imagenet/1percent.txt'
        memory = memory.dataset
    assert memory.split == 'train'
    assert query.split == ('test' if inat else 'val')
    assert memory.pipeline == query.pipeline  # the test transforms, both
    assert [t.type for t in query.pipeline] == [
        'CheckedLoadImageFromFile', 'ResizeEdge', 'CenterCrop', 'PackInputs']
    metric = cfg.test_evaluator
    if path in KNN:
        assert (metric.type, metric.k, metric.temperature) == (
            'KNNAccuracy', 20, 0.07)
        # an image folder's classes are counted from its labels (None)
        folder = 'image-folder' in osp.basename(path)
        assert metric.num_classes == (
            None if folder else 8142 if inat else 1000)
    else:
        assert metric == dict(type='LogisticRegressionAccuracy')


def test_the_main_jobs_benchmark_is_its_own_evaluation():
    """The toy kNN benchmark evaluates the main job's encoder exactly as the
    main job's own validation does: the same backbone, normalisation,
    memory bank, queries and metrics."""
    main = Config.fromfile(osp.join(
        CONFIGS, 'pmsn',
        'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py'))
    bench = Config.fromfile(osp.join(
        BENCH, 'vit-mini-p4-lastcls_knn-k20_shapes-digits.py'))
    backbone = dict(bench.model.backbone)
    assert (backbone.pop('out_type'), backbone.pop('final_norm'),
            backbone.pop('init_cfg')) == ('cls_token', True, None)
    assert backbone == main.model.backbone
    for key in ('mean', 'std', 'to_rgb'):
        assert bench.model.data_preprocessor[key] == \
            main.model.data_preprocessor[key]
    assert bench.test_dataloader == main.val_dataloader
    assert bench.test_evaluator == main.val_evaluator
