"""MultiHeadAccuracy against hand-computed accuracies."""
import pytest
import torch
from mmengine.evaluator import Evaluator
from mmengine.registry import init_default_scope
from mmpretrain.registry import METRICS
from mmpretrain.structures import DataSample

from pmsn_mm.evaluation.metrics import MultiHeadAccuracy

# 4 samples, 6 classes, labels 0, 1, 2, 3
LABELS = [0, 1, 2, 3]
# linear: ranks (best first) per sample
#   s0: 0 ...           -> top1 hit
#   s1: 0, 2, 3, 4, 5, 1 -> label 1 ranked 6th: miss even at top-5
#   s2: 2 ...           -> top1 hit
#   s3: 0, 1, 3 ...     -> label 3 ranked 3rd: top-5 hit
# top1 = 2/4 = 50 %, top5 = 3/4 = 75 %
LINEAR = [
    [0.50, 0.10, 0.10, 0.10, 0.10, 0.10],
    [0.30, 0.01, 0.25, 0.20, 0.14, 0.10],
    [0.10, 0.10, 0.50, 0.10, 0.10, 0.10],
    [0.40, 0.30, 0.05, 0.20, 0.04, 0.01],
]
# bn_linear: s0 hit, s1 hit, s2 ranked 2nd, s3 hit -> top1 75 %, top5 100 %
BN_LINEAR = [
    [0.60, 0.08, 0.08, 0.08, 0.08, 0.08],
    [0.05, 0.60, 0.05, 0.20, 0.05, 0.05],
    [0.05, 0.50, 0.30, 0.05, 0.05, 0.05],
    [0.02, 0.02, 0.02, 0.90, 0.02, 0.02],
]


def _predictions(linear=LINEAR, bn_linear=BN_LINEAR, labels=LABELS):
    out = []
    for i, y in enumerate(labels):
        s = DataSample().set_gt_label(y)
        s.set_field(torch.tensor(linear[i]), 'pred_score_linear')
        if bn_linear is not None:
            s.set_field(torch.tensor(bn_linear[i]), 'pred_score_bn_linear')
        out.append(s.to_dict())
    return out


def test_hand_computed_accuracies_per_probe():
    init_default_scope('mmpretrain')
    metric = METRICS.build(dict(type='MultiHeadAccuracy', topk=(1, 5)))
    evaluator = Evaluator(metric)
    preds = _predictions()
    evaluator.process(preds[:3])  # two batches
    evaluator.process(preds[3:])
    result = evaluator.evaluate(4)
    assert result == pytest.approx({
        'linear/top1': 50.0,
        'linear/top5': 75.0,
        'bn_linear/top1': 75.0,
        'bn_linear/top5': 100.0,
        'best/top1': 75.0,
    })


def test_topk_larger_than_the_number_of_classes_is_skipped():
    metric = MultiHeadAccuracy(topk=(1, 5))
    four = [row[:4] for row in BN_LINEAR]  # 4 classes, like KITTI/Dist
    metric.process(None, _predictions(linear=four, bn_linear=None))
    result = metric.evaluate(4)
    # s0 hit, s1 hit, s2 miss (1 > 2), s3 hit
    assert result == pytest.approx({'linear/top1': 75.0, 'best/top1': 75.0})


def test_selected_probes_and_prefix():
    metric = MultiHeadAccuracy(probes=('bn_linear', ), topk=1,
                               prefix='cifar100')
    metric.process(None, _predictions())
    assert metric.evaluate(4) == pytest.approx({
        'cifar100/bn_linear/top1': 75.0,
        'cifar100/best/top1': 75.0
    })


def test_missing_probe_scores_are_reported():
    metric = MultiHeadAccuracy(probes=('linear', 'bn_linear'))
    with pytest.raises(ValueError, match="no 'pred_score_bn_linear'"):
        metric.process(None, _predictions(bn_linear=None))
    plain = DataSample().set_gt_label(0).set_pred_score(torch.ones(3))
    with pytest.raises(ValueError, match='found no pred_score_<name>'):
        MultiHeadAccuracy().process(None, [plain.to_dict()])


@pytest.mark.parametrize('kwargs, match', [
    (dict(topk=()), 'topk must be distinct ints >= 1'),
    (dict(topk=(1, 1)), 'topk must be distinct ints >= 1'),
    (dict(topk=(0, )), 'MultiHeadAccuracy topk must be an int >= 1'),
    (dict(probes=()), 'probes must be None or distinct names'),
    (dict(probes=('a', 'a')), 'probes must be None or distinct names'),
])
def test_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MultiHeadAccuracy(**kwargs)
