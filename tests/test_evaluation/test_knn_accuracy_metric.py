"""KNNAccuracy against a brute-force k-NN, in an Evaluator and a ValLoop."""
import math

import numpy as np
import pytest
import torch
from mmengine.evaluator import Evaluator
from mmengine.model import BaseModel
from mmengine.registry import DefaultScope
from mmengine.runner import Runner
from mmpretrain.datasets import BaseDataset
from mmpretrain.structures import DataSample

from pmsn_mm.datasets import KNNEvalDataset
from pmsn_mm.evaluation.metrics import KNNAccuracy


def brute_force_knn(mem_feats, mem_labels, qry_feats, qry_labels, k, t,
                    topk):
    """Explicit loops: cosine sims, k nearest, exp(sim / t) class votes."""
    hits = {n: 0 for n in topk}
    num_classes = max(max(mem_labels), max(qry_labels)) + 1
    for q, q_label in zip(qry_feats, qry_labels):
        sims = []
        for j, m in enumerate(mem_feats):
            dot = sum(a * b for a, b in zip(q, m))
            norm = math.sqrt(sum(a * a for a in q)) * math.sqrt(
                sum(b * b for b in m))
            sims.append((dot / norm, j))
        sims.sort(reverse=True)
        votes = [0.0] * num_classes
        for sim, j in sims[:k]:
            votes[mem_labels[j]] += math.exp(sim / t)
        ranking = sorted(range(num_classes), key=lambda c: -votes[c])
        for n in topk:
            hits[n] += q_label in ranking[:n]
    return {f'top{n}': 100.0 * hits[n] / len(qry_labels) for n in topk}


def _problem(seed=0, n_mem=30, n_qry=12, dim=6, classes=4):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(classes, dim))
    mem_labels = rng.integers(0, classes, n_mem).tolist()
    qry_labels = rng.integers(0, classes, n_qry).tolist()
    mem = (centres[mem_labels] + 1.2 * rng.normal(size=(n_mem, dim))).tolist()
    qry = (centres[qry_labels] + 1.2 * rng.normal(size=(n_qry, dim))).tolist()
    return mem, mem_labels, qry, qry_labels


def _sample(label, role, feature=None):
    sample = DataSample().set_gt_label(label)
    sample.set_metainfo({'knn_role': role})
    if feature is not None:
        sample.set_field(torch.tensor(feature, dtype=torch.float32),
                         'features')
    return sample


# the paper's T, and a large T under which the value of k matters
@pytest.mark.parametrize('k,temperature', [(5, 0.07), (3, 1.0)])
def test_evaluator_process_evaluate_matches_brute_force(k, temperature):
    mem, mem_labels, qry, qry_labels = _problem()
    expected = brute_force_knn(mem, mem_labels, qry, qry_labels, k=k,
                               t=temperature, topk=(1, 2))
    with DefaultScope.overwrite_default_scope('mmpretrain'):
        evaluator = Evaluator(
            dict(type='KNNAccuracy', k=k, temperature=temperature,
                 topk=(1, 2)))
    assert isinstance(evaluator.metrics[0], KNNAccuracy)
    items = [(f, l, 'memory') for f, l in zip(mem, mem_labels)] + \
        [(f, l, 'query') for f, l in zip(qry, qry_labels)]
    # interleave roles across batches, as a shuffled/sharded loader could
    order = np.random.default_rng(1).permutation(len(items))
    items = [items[i] for i in order]
    for start in range(0, len(items), 8):
        batch = items[start:start + 8]
        outputs = [_sample(l, r, f) for f, l, r in batch]
        evaluator.process(outputs, dict(data_samples=outputs))
    result = evaluator.evaluate(len(items))
    assert set(result) == {'knn/top1', 'knn/top2'}
    assert result['knn/top1'] == pytest.approx(expected['top1'])
    assert result['knn/top2'] == pytest.approx(expected['top2'])
    assert 0 < expected['top1'] < 100  # a non-trivial case


def test_tensor_outputs_take_label_and_role_from_the_batch():
    mem, mem_labels, qry, qry_labels = _problem(seed=2)
    expected = brute_force_knn(mem, mem_labels, qry, qry_labels, k=20,
                               t=0.07, topk=(1, ))
    metric = KNNAccuracy()  # paper defaults: k=20, T=0.07
    feats = torch.tensor(mem + qry, dtype=torch.float32)
    refs = [_sample(y, 'memory') for y in mem_labels] + \
        [_sample(y, 'query') for y in qry_labels]
    metric.process(dict(data_samples=refs), list(feats))
    assert metric.evaluate(len(refs))['knn/top1'] == pytest.approx(
        expected['top1'])


def test_metric_errors():
    with pytest.raises(ValueError, match='k must be an int >= 1'):
        KNNAccuracy(k=0)
    with pytest.raises(ValueError,
                       match=r'temperature must be in \(0, inf\)'):
        KNNAccuracy(temperature=0.0)
    with pytest.raises(ValueError, match='topk'):
        KNNAccuracy(topk=())
    metric = KNNAccuracy(k=1)
    with pytest.raises(KeyError, match="'features'"):
        metric.process({}, [dict(gt_label=torch.tensor([0]))])
    with pytest.raises(KeyError, match="'knn_role'"):
        metric.process({}, [dict(features=torch.ones(2), gt_label=0)])
    with pytest.raises(ValueError, match='0 memory and 1 query'):
        metric.compute_metrics(
            [dict(feature=torch.ones(2), label=0, role='query')])
    with pytest.raises(ValueError, match="'memory' or 'query'"):
        metric.compute_metrics(
            [dict(feature=torch.ones(2), label=0, role='train')])
    # a small memory set: the message names the evaluator's setting
    few = [dict(feature=torch.ones(2), label=0, role=role)
           for role in ('memory', 'memory', 'query')]
    with pytest.raises(ValueError, match=r'KNNAccuracy k=20 is more than the '
                       r'2 memory \(training\) images to vote: set the '
                       r"evaluator's k \(e.g. --cfg-options "
                       r'test_evaluator.k=2'):
        KNNAccuracy(k=20).compute_metrics(few)


# ------------------------------------------------------ real Runner ValLoop
class _ArrayDataset(BaseDataset):
    """In-memory images (H, W, 3) with labels."""

    def __init__(self, images, labels, **kwargs):
        self._images, self._labels = images, labels
        super().__init__(ann_file='', serialize_data=False, **kwargs)

    def load_data_list(self):
        return [dict(img=img, gt_label=int(lab))
                for img, lab in zip(self._images, self._labels)]


class _FeatureModel(BaseModel):
    """Frozen random projection; ``predict`` stores ``features``."""

    def __init__(self, in_dim, dim=5):
        super().__init__()
        self.proj = torch.nn.Linear(in_dim, dim, bias=False)
        torch.nn.init.normal_(self.proj.weight,
                              generator=torch.Generator().manual_seed(0))

    def embed(self, inputs):
        return self.proj(torch.stack(inputs).float().flatten(1))

    def forward(self, inputs, data_samples=None, mode='tensor'):
        feats = self.embed(inputs)
        if mode == 'predict':
            for sample, feat in zip(data_samples, feats):
                sample.set_field(feat, 'features')
            return data_samples
        return feats


def test_val_loop_end_to_end(tmp_path):
    rng = np.random.default_rng(0)
    n_mem, n_qry, classes = 18, 7, 3
    protos = rng.integers(0, 255, (classes, 4, 4, 3))

    def images(labels):
        noise = rng.integers(-60, 60, (len(labels), 4, 4, 3))
        return list(np.clip(protos[labels] + noise, 0, 255).astype(np.uint8))

    mem_labels = rng.integers(0, classes, n_mem)
    qry_labels = rng.integers(0, classes, n_qry)
    pipeline = [dict(type='PackInputs')]
    dataset = KNNEvalDataset(
        memory=_ArrayDataset(images(mem_labels), mem_labels,
                             pipeline=pipeline),
        query=_ArrayDataset(images(qry_labels), qry_labels,
                            pipeline=pipeline))
    assert dataset[n_mem].get('data_samples').knn_role == 'query'
    model = _FeatureModel(in_dim=48)
    runner = Runner(
        model=model,
        work_dir=str(tmp_path),
        val_dataloader=dict(
            dataset=dataset,
            batch_size=4,  # the memory/query boundary falls inside a batch
            sampler=dict(type='DefaultSampler', shuffle=False),
            num_workers=0),
        val_evaluator=dict(type='KNNAccuracy', k=5, topk=(1, 2)),
        val_cfg=dict(),
        default_scope='mmpretrain',
        default_hooks=dict(logger=dict(type='LoggerHook', interval=1)),
        log_level='WARNING')
    metrics = runner.val()

    with torch.no_grad():
        def feats(ds):
            return model.embed([ds[i]['inputs'] for i in range(len(ds))])
        mem = feats(dataset.memory).tolist()
        qry = feats(dataset.query).tolist()
    expected = brute_force_knn(mem, mem_labels.tolist(), qry,
                               qry_labels.tolist(), k=5, t=0.07, topk=(1, 2))
    assert metrics['knn/top1'] == pytest.approx(expected['top1'])
    assert metrics['knn/top2'] == pytest.approx(expected['top2'])


def test_knn_eval_dataset_roles_and_errors():
    pipeline = [dict(type='PackInputs')]
    img = [np.zeros((2, 2, 3), np.uint8)] * 3
    ds = KNNEvalDataset(
        memory=_ArrayDataset(img[:2], [0, 1], pipeline=pipeline),
        query=_ArrayDataset(img[:1], [1], pipeline=pipeline,
                            metainfo=dict(classes=('a', 'b'))))
    assert len(ds) == 3 and ds.get_roles() == ['memory', 'memory', 'query']
    assert [ds.locate(i) for i in (0, 2, -1)] == [('memory', 0), ('query', 0),
                                                  ('query', 0)]
    assert ds.get_data_info(1)['knn_role'] == 'memory'
    assert ds[0]['data_samples'].knn_role == 'memory'
    assert ds.metainfo['classes'] == ('a', 'b')
    with pytest.raises(IndexError):
        ds.locate(3)
    unpacked = KNNEvalDataset(memory=_ArrayDataset(img[:1], [0]),
                              query=_ArrayDataset(img[:1], [0]))
    with pytest.raises(ValueError, match='PackInputs'):
        unpacked[0]
    with pytest.raises(ValueError, match='must not be empty'):
        KNNEvalDataset(memory=_ArrayDataset([], []),
                       query=_ArrayDataset(img[:1], [0]))
