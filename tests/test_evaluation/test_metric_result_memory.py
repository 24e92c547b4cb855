"""Per-sample results kept by our metrics own their memory.

mmengine gathers the results of every rank by pickling them
(``collect_results`` -> ``pickle.dump``), and pickling a tensor view writes
its whole storage: a kept feature that is a view of the batch's (B, T, D)
backbone output costs B * T * D floats per sample instead of D (issue 25:
~1.7 MB per toy kNN sample, 11 GB per rank). Each kept tensor must therefore
be a copy whose storage holds exactly its own elements, and a pickled result
must stay within a bound that depends on D only (not on B or T).
"""
import pickle

import pytest
import torch
from mmengine.evaluator import Evaluator
from mmengine.registry import init_default_scope
from mmpretrain.structures import DataSample

from pmsn_mm.evaluation.metrics import (KNNAccuracy,
                                        LogisticRegressionAccuracy,
                                        MultiHeadAccuracy)
from pmsn_mm.models.heads.multi_linear_probe_head import MultiLinearProbeHead

#: Pickle overhead of one small result (a dict with a tensor, a label and a
#: role is ~450-650 bytes); the payload is numel * itemsize on top.
OVERHEAD = 2048


def _owns_its_memory(tensor: torch.Tensor) -> bool:
    return (tensor.untyped_storage().nbytes() ==
            tensor.numel() * tensor.element_size())


def _pickled(result) -> int:
    return len(pickle.dumps(result, protocol=2))  # as collect_results_cpu


def _tokens(batch, tokens, dim, dtype=torch.float32):
    """A (B, T, D) backbone output and its CLS rows: (D,) views of it, as
    the feature loop passes them (``list(batch_features(...))``)."""
    out = torch.randn(batch, tokens, dim).to(dtype)
    return list(out[:, 0])


def _role_samples(batch):
    samples = []
    for i in range(batch):
        sample = DataSample().set_gt_label(i % 3)
        sample.set_metainfo(
            {'knn_role': 'memory' if i % 2 else 'query'})
        samples.append(sample)
    return samples


@pytest.mark.parametrize('metric_type',
                         [KNNAccuracy, LogisticRegressionAccuracy])
@pytest.mark.parametrize('batch,tokens', [(16, 10), (64, 40)])
def test_kept_features_are_not_views_of_the_batch(metric_type, batch,
                                                  tokens):
    dim = 8
    metric = metric_type()
    outputs = _tokens(batch, tokens, dim)
    assert not _owns_its_memory(outputs[0])  # the setting of the bug
    metric.process(dict(data_samples=_role_samples(batch)), outputs)
    assert len(metric.results) == batch
    for result, output in zip(metric.results, outputs):
        feature = result['feature']
        assert feature.shape == (dim, ) and feature.dtype == torch.float32
        assert _owns_its_memory(feature)
        torch.testing.assert_close(feature, output)
        assert _pickled(result) <= dim * 4 + OVERHEAD


@pytest.mark.parametrize('dtype', [torch.float32, torch.float16])
def test_features_in_data_samples_are_copied_too(dtype):
    """Outputs that carry the feature (D,) or (1, D) under
    ``feature_key``, as views of a batch, in any float dtype."""
    batch, tokens, dim = 32, 20, 6
    rows = _tokens(batch, tokens, dim, dtype)
    outputs = []
    for i, sample in enumerate(_role_samples(batch)):
        feature = rows[i] if i % 2 else rows[i][None]  # (D,) and (1, D)
        sample.set_field(feature, 'features')
        outputs.append(sample)
    metric = KNNAccuracy()
    metric.process(dict(data_samples=None), outputs)
    for result, row in zip(metric.results, rows):
        feature = result['feature']
        assert feature.shape == (dim, ) and feature.dtype == torch.float32
        assert _owns_its_memory(feature)
        torch.testing.assert_close(feature, row.float())
        assert _pickled(result) <= dim * 4 + OVERHEAD


def test_gathered_results_of_a_batch_stay_small():
    """What a rank writes for collect_results: all results of a batch,
    pickled together, are ~D floats each, not B * T * D."""
    batch, tokens, dim = 128, 26, 64  # the toy kNN: 256 x 26 x 64
    metric = KNNAccuracy()
    metric.process(dict(data_samples=_role_samples(batch)),
                   _tokens(batch, tokens, dim))
    assert _pickled(metric.results) <= batch * (dim * 4 + OVERHEAD)


def test_multi_head_scores_are_not_views_of_the_batch():
    """MultiLinearProbeHead.predict writes row views of its (B, C) scores;
    MultiHeadAccuracy keeps copies of them (and of the labels)."""
    batch, classes = 32, 50
    head = MultiLinearProbeHead(num_classes=classes, in_channels=4)
    head.eval()
    samples = [DataSample().set_gt_label(i % classes) for i in range(batch)]
    with torch.no_grad():
        preds = head.predict((torch.randn(batch, 4), ), samples)
    preds = [p.to_dict() for p in preds]
    assert not _owns_its_memory(preds[0]['pred_score_linear'])
    metric = MultiHeadAccuracy(topk=(1, ))
    metric.process(None, preds)
    for result, pred in zip(metric.results, preds):
        assert set(result) == {'gt_label', 'linear', 'bn_linear'}
        for name, value in result.items():
            assert _owns_its_memory(value), name
        torch.testing.assert_close(result['linear'],
                                   pred['pred_score_linear'])
        torch.testing.assert_close(result['gt_label'], pred['gt_label'])
        assert _pickled(result) <= 2 * classes * 4 + 3 * OVERHEAD
    # and it still scores
    init_default_scope('mmpretrain')
    evaluator = Evaluator(MultiHeadAccuracy(topk=(1, )))
    evaluator.process(preds)
    assert set(evaluator.evaluate(batch)) == {'linear/top1',
                                              'bn_linear/top1', 'best/top1'}


def test_cpu_copies_of_mixed_tensors_are_copied_one_by_one():
    """Shapes or dtypes that differ (no common stack), and non-contiguous
    views: every copy is contiguous, owns its memory, keeps its values."""
    from pmsn_mm.evaluation.metrics.cpu_copies import cpu_copies
    grid = torch.randn(6, 5, 4)
    tensors = [grid[0, :, 1], grid[1].t(), grid[2, 1].half(), grid[3, :2]]
    for dtype in (None, torch.float32):
        copies = cpu_copies(tensors, dtype=dtype)
        for copy, tensor in zip(copies, tensors):
            assert copy.is_contiguous() and _owns_its_memory(copy)
            assert copy.dtype == (tensor.dtype if dtype is None else dtype)
            torch.testing.assert_close(copy, tensor.to(copy.dtype))
    flat = cpu_copies(tensors, flatten=True)
    assert [c.shape for c in flat] == [(5, ), (20, ), (4, ), (8, )]
    assert cpu_copies([]) == []
