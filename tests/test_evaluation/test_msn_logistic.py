"""Official MSN's low-shot logistic regression (logistic_eval.py, cyanure):
the preprocessing, the objective's optimum, the metric and the configs.

Every expected value is computed here: cyanure's preprocessing and
objective are restated from its documentation and C++ source (rows centred
then L2-normalised; ``(1/N) sum CE + (lambda/2) ||W||^2`` with
``lambda = lambd / N``), its gradient taken by torch autograd.
"""
import glob
import os
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.evaluator import Evaluator
from mmengine.registry import DefaultScope, init_default_scope
from mmpretrain.registry import DATASETS
from mmpretrain.structures import DataSample

from pmsn_mm.datasets.sample_data.layouts import write_imagenet
from pmsn_mm.evaluation.functional.msn_logistic import (center_normalize_rows,
                                                        evaluate_msn_logistic,
                                                        msn_logistic_c)
from pmsn_mm.evaluation.metrics import MSNLogisticRegressionAccuracy
from tests._configs import CONFIGS

BENCH = osp.join(CONFIGS, 'pmsn', 'benchmarks')
MSN_CONFIGS = sorted(glob.glob(osp.join(BENCH, '*_msn-logreg_*.py')))
#: The official --subset-path files (facebookresearch/msn
#: imagenet_subsets1/) and where the configs read them.
OFFICIAL_LISTS = {
    'in1k-1img': 'data/imagenet/imagenet_subsets1/1imgs_class.txt',
    'in1k-2img': 'data/imagenet/imagenet_subsets1/2imgs_class.txt',
    'in1k-5img': 'data/imagenet/imagenet_subsets1/5imgs_class.txt',
    'in1k-1pct': 'data/imagenet/1percent.txt',  # SimCLR's = MSN's 1 %
}
ARCHS = {'vit-small-p16': 'deit-small', 'vit-base-p16': 'deit-base',
         'vit-large-p16': 'large'}


def _restated_preprocess(x):
    """cyanure ``preprocess(X, centering=True, normalize=True,
    columns=False)``, one row at a time."""
    out = []
    for row in np.asarray(x, dtype=np.float64):
        row = row - row.mean()
        out.append(row / np.linalg.norm(row))
    return np.stack(out)


def _cyanure_gradient(weights, x, labels, lambd):
    """Gradient of (1/N) sum CE(W^T x_i, y_i) + (lambd/N)/2 ||W||^2 by
    torch autograd, on the restated preprocessing."""
    x = torch.tensor(_restated_preprocess(x))
    w = torch.tensor(weights, requires_grad=True)
    n = len(labels)
    objective = torch.nn.functional.cross_entropy(
        x @ w, torch.as_tensor(labels)) + lambd / n / 2 * (w**2).sum()
    objective.backward()
    return w.grad.numpy()


def _gaussian_classes(seed, per_class, classes=5, dim=12, spread=2.0):
    """Overlapping Gaussian classes (not separable), labels 0..classes-1."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(7).normal(size=(classes, dim))
    labels = np.repeat(np.arange(classes), per_class)
    return centres[labels] + spread * rng.normal(
        size=(len(labels), dim)) + 3.0, labels


def test_preprocessing_is_cyanures_rows_centred_then_normalised():
    x = np.random.default_rng(0).normal(size=(7, 5)) * 3 + 2
    out = center_normalize_rows(torch.tensor(x, dtype=torch.float32))
    np.testing.assert_allclose(out, _restated_preprocess(x), atol=1e-6)
    # centring first: every row has mean 0 AND unit norm
    np.testing.assert_allclose(out.mean(1), 0, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1, atol=1e-7)
    # a constant row has nothing left after centring: it stays zero
    assert not center_normalize_rows(np.full((1, 4), 5.0)).any()
    with pytest.raises(ValueError, match=r'shape \(N, D\)'):
        center_normalize_rows(np.ones(3))


def test_c_is_one_over_lambd():
    # C sum CE + 1/2 ||W||^2 = (F with lambda = lambd / N) / (lambda N)
    assert msn_logistic_c(0.0025, 1000) == pytest.approx(400.0)
    assert msn_logistic_c(0.025, 3) == pytest.approx(40.0)
    # two classes: one vector d, W = [-d/2, d/2], penalty lambda/4 ||d||^2
    assert msn_logistic_c(0.0025, 2) == pytest.approx(800.0)
    with pytest.raises(ValueError, match='lambd must be in'):
        msn_logistic_c(0.0, 10)
    with pytest.raises(ValueError, match='at least 2 classes'):
        msn_logistic_c(0.1, 1)


@pytest.mark.parametrize('classes', [2, 5])
@pytest.mark.parametrize('lambd', [0.0025, 0.025, 0.25])
def test_solution_is_the_optimum_of_cyanures_objective(classes, lambd):
    train_x, train_y = _gaussian_classes(0, 8, classes=classes)
    test_x, test_y = _gaussian_classes(1, 20, classes=classes)
    result = evaluate_msn_logistic(train_x, train_y, test_x, test_y,
                                   lambd=lambd)
    assert result.weights.shape == (12, classes)
    grad = _cyanure_gradient(result.weights, train_x, train_y, lambd)
    grad_at_zero = _cyanure_gradient(np.zeros((12, classes)), train_x,
                                     train_y, lambd)
    # first-order optimality of a strongly convex objective: the optimum
    assert np.abs(grad).max() <= 1e-5 * np.abs(grad_at_zero).max()
    # the predictions are the argmax of W^T x on the restated preprocessing
    pred = np.argmax(_restated_preprocess(test_x) @ result.weights, axis=1)
    np.testing.assert_array_equal(result.predictions, pred)
    assert result.test_accuracy == pytest.approx(100 * np.mean(
        pred == test_y))
    assert 0 < result.test_accuracy < 100  # a non-trivial problem


def test_labels_need_not_start_at_zero():
    train_x, train_y = _gaussian_classes(0, 8)
    test_x, test_y = _gaussian_classes(1, 10)
    shifted = evaluate_msn_logistic(train_x, train_y + 10, test_x,
                                    test_y + 10)
    plain = evaluate_msn_logistic(train_x, train_y, test_x, test_y)
    np.testing.assert_array_equal(shifted.predictions, plain.predictions + 10)
    assert shifted.test_accuracy == plain.test_accuracy


def _sample(label, role, feature):
    sample = DataSample().set_gt_label(label)
    sample.set_metainfo({'knn_role': role})
    sample.set_field(torch.tensor(feature, dtype=torch.float32), 'features')
    return sample


def test_metric_scores_the_optimum_through_an_evaluator():
    train_x, train_y = _gaussian_classes(2, 6)
    test_x, test_y = _gaussian_classes(3, 15)
    lambd = 0.025
    with DefaultScope.overwrite_default_scope('mmpretrain'):
        evaluator = Evaluator(
            dict(type='MSNLogisticRegressionAccuracy', lambd=lambd))
    assert isinstance(evaluator.metrics[0], MSNLogisticRegressionAccuracy)
    items = [(f, y, 'memory') for f, y in zip(train_x, train_y)] + \
        [(f, y, 'query') for f, y in zip(test_x, test_y)]
    order = np.random.default_rng(1).permutation(len(items))
    for start in range(0, len(items), 8):
        outputs = [_sample(int(items[i][1]), items[i][2], items[i][0])
                   for i in order[start:start + 8]]
        evaluator.process(outputs, dict(data_samples=outputs))
    metrics = evaluator.evaluate(len(items))
    assert set(metrics) == {'msn_logreg/top1', 'msn_logreg/train_top1'}
    # the optimum, found here by torch's L-BFGS on the restated objective
    x = torch.tensor(_restated_preprocess(train_x.astype(np.float32)))
    w = torch.zeros(12, 5, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=500, tolerance_grad=1e-12,
                            tolerance_change=0, line_search_fn='strong_wolfe')
    target = torch.as_tensor(train_y)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w, target) + \
            lambd / len(train_y) / 2 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    scores = _restated_preprocess(test_x.astype(np.float32)) @ \
        w.detach().numpy()
    margin = np.sort(scores, axis=1)
    assert (margin[:, -1] - margin[:, -2]).min() > 1e-4  # no near-ties
    expected = 100 * np.mean(np.argmax(scores, axis=1) == test_y)
    assert metrics['msn_logreg/top1'] == pytest.approx(expected)


@pytest.mark.parametrize('kwargs,match', [
    (dict(lambd=0), 'MSNLogisticRegressionAccuracy lambd must be in'),
    (dict(lambd=True), 'MSNLogisticRegressionAccuracy lambd must be in'),
    (dict(tol=-1e-6), 'MSNLogisticRegressionAccuracy tol must be in'),
    (dict(max_iter=0), 'MSNLogisticRegressionAccuracy max_iter must be an '
     'int >= 1'),
])
def test_metric_refuses_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MSNLogisticRegressionAccuracy(**kwargs)


def _encoder_and_split(path):
    name = osp.basename(path)[:-len('.py')]
    encoder, split = name.split('-msn-lastcls_msn-logreg_')
    return encoder, split


def test_there_is_a_config_per_released_size_and_split():
    cells = {_encoder_and_split(p) for p in MSN_CONFIGS}
    assert cells == {(e, s) for e in ARCHS for s in OFFICIAL_LISTS}


@pytest.mark.parametrize('path', MSN_CONFIGS, ids=osp.basename)
def test_config_is_the_official_evaluation(path):
    encoder, split = _encoder_and_split(path)
    cfg = Config.fromfile(path)
    assert cfg.get('train_dataloader') is None and cfg.test_cfg.type == \
        'FeatureTestLoop'
    # forward_blocks(x, 1): the last block's CLS token, no final norm
    backbone = cfg.model.backbone
    assert (backbone.type, backbone.arch, backbone.patch_size,
            backbone.out_type, backbone.out_indices, backbone.final_norm,
            backbone.init_cfg) == ('VisionTransformer', ARCHS[encoder], 16,
                                   'cls_token', -1, False, None)
    assert cfg.model.head is None
    if encoder == 'vit-small-p16':  # the model of the features cross-check
        msn = Config.fromfile(osp.join(
            CONFIGS, '_base_', 'models',
            'vit-small-p16-msn-lastcls_features.py'))
        assert cfg.model == msn.model
    # the official transforms: resize 256 (bilinear), center crop 224,
    # ImageNet mean and std
    memory, query = cfg.test_dataloader.dataset.memory, \
        cfg.test_dataloader.dataset.query
    assert memory.type == 'LowShotDataset'
    assert memory.list_file == OFFICIAL_LISTS[split]
    assert (memory.dataset.type, memory.dataset.split, query.type,
            query.split) == ('ImageNet', 'train', 'ImageNet', 'val')
    for pipeline in (memory.dataset.pipeline, query.pipeline):
        assert [dict(t) for t in pipeline] == [
            dict(type='CheckedLoadImageFromFile'),
            dict(type='ResizeEdge', scale=256, edge='short',
                 backend='pillow'),
            dict(type='CenterCrop', crop_size=224),
            dict(type='PackInputs')]
    preprocessor = cfg.data_preprocessor  # mmpretrain: merged into model
    np.testing.assert_allclose(
        np.array(preprocessor.mean) / 255, (0.485, 0.456, 0.406), atol=1e-6)
    np.testing.assert_allclose(
        np.array(preprocessor.std) / 255, (0.229, 0.224, 0.225), atol=1e-6)
    assert preprocessor.to_rgb
    assert cfg.test_evaluator == dict(type='MSNLogisticRegressionAccuracy',
                                      lambd=0.0025)


@pytest.fixture()
def imagenet_root(tmp_path, monkeypatch):
    """A 3-class ImageNet layout in ``data/imagenet`` of the working dir."""
    write_imagenet(str(tmp_path / 'data' / 'imagenet'),
                   np.random.default_rng(0), train_counts=(3, 3, 3),
                   long_side=(40, 60), val_per_class=1, awkward=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _memory(path):
    init_default_scope('mmpretrain')
    return DATASETS.build(Config.fromfile(path).test_dataloader.dataset)


def test_low_shot_config_refuses_a_missing_subset_file(imagenet_root):
    path = osp.join(BENCH,
                    'vit-small-p16-msn-lastcls_msn-logreg_in1k-1img.py')
    # the sample data writes the lists; a user's ImageNet may lack them
    os.remove(imagenet_root / 'data' / 'imagenet' / 'imagenet_subsets1' /
              '1imgs_class.txt')
    with pytest.raises(FileNotFoundError,
                       match='imagenet_subsets1/1imgs_class.txt'):
        _memory(path)


def test_low_shot_config_keeps_the_listed_images(imagenet_root):
    names = ['n01440764_2.JPEG', 'n01443537_1.JPEG', 'n01484850_3.JPEG']
    listed = imagenet_root / 'data' / 'imagenet' / 'imagenet_subsets1'
    listed.mkdir(exist_ok=True)  # the sample data's lists, replaced
    (listed / '1imgs_class.txt').write_text('\n'.join(names) + '\n')
    dataset = _memory(osp.join(
        BENCH, 'vit-small-p16-msn-lastcls_msn-logreg_in1k-1img.py'))
    kept = [osp.basename(dataset.memory.get_data_info(i)['img_path'])
            for i in range(len(dataset.memory))]
    assert sorted(kept) == sorted(names)
    assert sorted(dataset.memory.get_gt_labels().tolist()) == [0, 1, 2]
    assert len(dataset.query) == 3
