"""Frozen-feature evaluation: the val/test loops that extract features, the
metric that gathers them, and the kNN metric on it.

The kNN benchmark in three files (the logistic-regression benchmarks share
the first two): :mod:`pmsn_mm.datasets.knn_eval_dataset` (memory and query
splits as one dataset, each sample tagged with ``knn_role``); this file
(the loops run :func:`batch_features` on every batch instead of
``val_step``, :class:`KNNAccuracy` gathers the ranks' results and scores
on rank 0); :mod:`pmsn_mm.evaluation.functional.knn` (the cosine k-NN
vote on plain tensors, DINO's ``knn_classifier``). See
docs/evaluation.md, 'Faster probes, kNN, logistic regression and exports'.

Config (``configs/pmsn/benchmarks/*_knn-*.py``)::

    test_cfg = dict(type='FeatureTestLoop')
    test_dataloader = dict(
        dataset=dict(type='KNNEvalDataset', memory=..., query=...), ...)
    test_evaluator = dict(type='KNNAccuracy', k=20, temperature=0.07)
"""
from typing import (TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple,
                    Union, cast)

import torch
from mmengine.dataset import default_collate
from mmengine.evaluator import BaseMetric, Evaluator
from mmengine.runner import TestLoop, ValLoop, autocast
from mmpretrain.evaluation import Accuracy
from mmpretrain.registry import LOOPS, METRICS
from mmpretrain.utils import get_ori_model
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from ...models.utils.pooling import last_output, pooled
from ...utils.validation import check_choice, check_int, check_positive
from ..functional.knn import weighted_knn_scores
from .cpu_copies import cpu_copies

if TYPE_CHECKING:
    from mmengine.model import BaseModel

#: Where :func:`batch_features` reads (``'probs'``: prototype models).
STAGES = ('backbone', 'neck', 'probs')


def batch_features(model: 'BaseModel', data: dict,
                   stage: str = 'backbone') -> Tensor:
    """Features of a ``default_collate`` batch, shape (B, D).

    The data pre-processor, its first view, then ``extract_feat(inputs,
    stage=stage)`` for prototype models (PMSN, PSwAV), else the last output
    of ``extract_feat`` (and ``neck`` for ``'neck'``), 4-D maps pooled.
    Call under ``no_grad``.

    Args:
        model: An mmpretrain model (e.g. PMSN) in the desired mode.
        data: A collated batch with ``inputs`` and ``data_samples``.
        stage: ``'backbone'``, ``'neck'`` or ``'probs'`` (prototype models).

    Returns:
        Tensor of shape (B, D).
    """
    inputs = model.data_preprocessor(data, False)['inputs']
    inputs = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    if hasattr(model, 'embed'):
        return model.extract_feat(inputs, stage=stage)
    if stage == 'probs':
        raise ValueError(
            f"stage='probs' needs a prototype model (PMSN, PSwAV), but the "
            f'model is {type(model).__name__}.')
    out = last_output(model.extract_feat(inputs))
    if stage == 'neck':
        out = last_output(model.neck(out))
    return pooled(out)


class FeatureLoopMixin:
    """What the val and test feature loops share: ``stage`` and one batch.

    Args:
        runner: The runner.
        dataloader: The dataloader (or its config).
        evaluator: The evaluator (or its config).
        fp16: Extract features under autocast. Defaults to False.
        stage: One of ``STAGES``. Defaults to ``'backbone'``.
    """

    #: ``'val'`` or ``'test'``: which hooks :meth:`run_iter` calls.
    mode: str = 'val'
    # set by the mmengine loop this class is mixed into
    runner: Any
    evaluator: Evaluator
    fp16: bool

    def __init__(self,
                 runner,
                 dataloader: Union[DataLoader, Dict],
                 evaluator: Union[Evaluator, Dict, List],
                 fp16: bool = False,
                 stage: str = 'backbone') -> None:
        check_choice(f'{type(self).__name__} stage', stage, STAGES)
        # the mmengine loop's ``__init__`` (after this class in the MRO)
        cast(Any, super()).__init__(runner, dataloader, evaluator, fp16)
        self.stage = stage

    @torch.no_grad()
    def run_iter(self, idx: int, data_batch: dict) -> None:
        """Features of one batch, passed to the evaluator.

        Args:
            idx: Index of the batch.
            data_batch: A batch of the loop's dataloader.
        """
        runner = self.runner
        runner.call_hook(f'before_{self.mode}_iter', batch_idx=idx,
                         data_batch=data_batch)
        model = get_ori_model(runner.model)
        with autocast(enabled=self.fp16):
            outputs = list(batch_features(model, data_batch, self.stage))
        self.evaluator.process(data_samples=outputs, data_batch=data_batch)
        runner.call_hook(f'after_{self.mode}_iter', batch_idx=idx,
                         data_batch=data_batch, outputs=outputs)


@LOOPS.register_module()
class FeatureValLoop(FeatureLoopMixin, ValLoop):
    """mmengine's ``ValLoop`` running :func:`batch_features` instead of
    ``model.val_step``: the evaluator (a :class:`FrozenFeatureMetric`)
    receives one Tensor of shape (D,) per sample (config: the module
    docstring, with ``val_`` keys).

    Args:
        runner: The runner.
        dataloader: The val dataloader (or its config).
        evaluator: The evaluator (or its config).
        fp16: Extract features under autocast. Defaults to False.
        stage: One of ``STAGES``. Defaults to ``'backbone'``.
    """

    mode = 'val'


@LOOPS.register_module()
class FeatureTestLoop(FeatureLoopMixin, TestLoop):
    """mmengine's ``TestLoop`` on frozen features: :class:`FeatureValLoop`
    for ``tools/test.py CONFIG CHECKPOINT`` (config: the module docstring).

    Args:
        runner: The runner.
        dataloader: The test dataloader (or its config).
        evaluator: The evaluator (or its config).
        fp16: Extract features under autocast. Defaults to False.
        stage: One of ``STAGES``. Defaults to ``'backbone'``.
    """

    mode = 'test'


def sample_label(sample: Any, key: str) -> int:
    """The integer label ``key`` of a packed data sample (``gt_label`` or a
    metainfo field such as the toy set's ``digit_label``).

    Args:
        sample: A ``DataSample`` (or a dict).
        key: The label's field name.

    Returns:
        int.
    """
    value = sample.get(key) if hasattr(sample, 'get') else None
    if value is None:
        raise KeyError(
            f"label '{key}' is not in the packed data samples; keep it in "
            "the pipeline's PackInputs (gt_label, or meta_keys=(...)).")
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"'{key}' must hold one class label per sample, "
                             f'got a tensor of shape {tuple(value.shape)}.')
        return int(value.reshape(-1)[0])
    return int(value)


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for dicts, ``obj.get(key)`` for data elements, or None."""
    if isinstance(obj, dict):
        return obj.get(key)
    getter = getattr(obj, 'get', None)
    return getter(key) if callable(getter) else None


class FrozenFeatureMetric(BaseMetric):
    """Collects ``(feature, label, role)`` per sample; subclasses score.

    Contract: the dataset is a :class:`pmsn_mm.datasets.KNNEvalDataset`
    (``metainfo[role_key]`` in ``{'memory', 'query'}``); each output is a
    Tensor of shape (D,) or a data sample with it under ``feature_key``;
    label and role are read from the output, else from ``data_batch``.
    Results are gathered and scored on rank 0 (:meth:`split`).

    Args:
        feature_key: Field of the output holding the feature.
        label_key: Field holding the class label. Defaults to ``'gt_label'``.
        role_key: Metainfo field of the role. Defaults to ``'knn_role'``.
        collect_device: ``'cpu'`` or ``'gpu'`` (for result gathering).
        prefix: Metric name prefix.
    """

    def __init__(self,
                 feature_key: str = 'features',
                 label_key: str = 'gt_label',
                 role_key: str = 'knn_role',
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        self.feature_key = feature_key
        self.label_key = label_key
        self.role_key = role_key

    def _lookup(self, key: str, output: Any, reference: Any) -> Any:
        value = _get(output, key)
        if value is None and reference is not None:
            value = _get(reference, key)
        if value is None:
            raise KeyError(
                f"{type(self).__name__} found no '{key}' in the model output "
                'or the data batch sample; wrap the dataset in '
                'KNNEvalDataset (role) and keep the label in PackInputs.')
        return value

    def process(self, data_batch: Any, data_samples: Sequence) -> None:
        """Store feature, label and role of every sample of a batch
        (float32 CPU copies owning their memory: a view pickles the batch).

        Args:
            data_batch: The dataloader batch (``{'inputs', 'data_samples'}``).
            data_samples: Model outputs, one per sample (see the contract).
        """
        batch_samples = _get(data_batch, 'data_samples')
        features, labels, roles = [], [], []
        for i, output in enumerate(data_samples):
            reference = batch_samples[i] if batch_samples is not None \
                and i < len(batch_samples) else None
            is_tensor = isinstance(output, Tensor)
            source = None if is_tensor else output
            feature = output if is_tensor else _get(output, self.feature_key)
            if not isinstance(feature, Tensor):
                raise KeyError(
                    f'{type(self).__name__} needs a Tensor feature per sample '
                    f"under '{self.feature_key}' (or the output itself), got "
                    f'{type(feature).__name__}.')
            features.append(feature)
            label = self._lookup(self.label_key, source, reference)
            labels.append(sample_label({self.label_key: label},
                                       self.label_key))
            roles.append(str(self._lookup(self.role_key, source, reference)))
        features = cpu_copies(features, dtype=torch.float32, flatten=True)
        for feature, label, role in zip(features, labels, roles):
            self.results.append(dict(feature=feature, label=label, role=role))

    def split(self, results: List[dict]
              ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        """Memory features and labels, query features and labels.

        Args:
            results: Gathered outputs of :meth:`process`.

        Returns:
            ``(memory (N, D), memory labels (N,), query (M, D), query
            labels (M,))``.
        """
        roles = {r['role'] for r in results}
        if not roles <= {'memory', 'query'}:
            raise ValueError(f"'{self.role_key}' must be 'memory' or "
                             f"'query', got {sorted(roles)}.")
        memory = [r for r in results if r['role'] == 'memory']
        query = [r for r in results if r['role'] == 'query']
        if not memory or not query:
            raise ValueError(
                f'{type(self).__name__} needs memory and query samples, got '
                f'{len(memory)} memory and {len(query)} query samples.')
        return (torch.stack([r['feature'] for r in memory]),
                torch.tensor([r['label'] for r in memory]),
                torch.stack([r['feature'] for r in query]),
                torch.tensor([r['label'] for r in query]))


@METRICS.register_module()
class KNNAccuracy(FrozenFeatureMetric):
    """Top-k accuracy of a temperature-weighted cosine k-NN classifier.

    MSN/DINO's protocol: each query votes with its ``k`` most cosine-similar
    memory features, neighbour ``j`` adding ``exp(sim_j / temperature)`` to its
    class (:func:`~pmsn_mm.evaluation.functional.knn.weighted_knn_scores`).

    Args:
        k: Number of neighbours. Defaults to 20.
        temperature: Vote temperature. Defaults to 0.07.
        topk: Accuracies to report, e.g. ``(1, 5)`` (a k above the C
            classes reports top-C). Defaults to ``(1, )``.
        num_classes: Number of classes; None infers ``max label + 1``.
        feature_key: Field of the output holding the feature.
        label_key: Field holding the class label. Defaults to ``'gt_label'``.
        role_key: Metainfo field of the role. Defaults to ``'knn_role'``.
        collect_device: ``'cpu'`` or ``'gpu'`` (for result gathering).
        prefix: Metric name prefix. Defaults to ``'knn'`` (``knn/top1``).
    """

    default_prefix: Optional[str] = 'knn'

    def __init__(self,
                 k: int = 20,
                 temperature: float = 0.07,
                 topk: Sequence[int] = (1, ),
                 num_classes: Optional[int] = None,
                 feature_key: str = 'features',
                 label_key: str = 'gt_label',
                 role_key: str = 'knn_role',
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(feature_key, label_key, role_key, collect_device,
                         prefix)
        self.k = check_int('KNNAccuracy k', k, 1)
        self.temperature = check_positive('KNNAccuracy temperature',
                                          temperature)
        if not topk:
            raise ValueError('KNNAccuracy topk must be a non-empty sequence '
                             f'of ints >= 1, but is {topk!r}.')
        self.topk = tuple(check_int('KNNAccuracy topk', t, 1) for t in topk)
        if num_classes is not None:  # None: from the labels
            num_classes = check_int('KNNAccuracy num_classes', num_classes, 1)
        self.num_classes = num_classes

    def compute_metrics(self, results: List[dict]) -> Dict[str, float]:
        """Top-k accuracies (in %) of the query samples.

        Args:
            results: Gathered outputs of :meth:`process`.

        Returns:
            ``{'top1': ..., 'top5': ...}`` for the requested ``topk``.
        """
        mem_feats, mem_labels, qry_feats, qry_labels = self.split(results)
        if self.k > len(mem_feats):
            raise ValueError(
                f'KNNAccuracy k={self.k} is more than the {len(mem_feats)} '
                'memory (training) images to vote: set the evaluator\'s k '
                f'(e.g. --cfg-options test_evaluator.k={len(mem_feats)}, or '
                'val_evaluator.k) to at most that, or use more images.')
        num_classes = self.num_classes or int(
            max(mem_labels.max(), qry_labels.max())) + 1
        scores = weighted_knn_scores(mem_feats, mem_labels, qry_feats,
                                     num_classes, self.k, self.temperature)
        # top-k of more than the C classes is top-C (100 %)
        accs = Accuracy.calculate(
            scores,
            qry_labels,
            topk=[min(t, num_classes) for t in self.topk],
            thrs=(None, ))
        return {f'top{t}': float(acc[0]) for t, acc in zip(self.topk, accs)}


@torch.no_grad()
def extract_features(
        model: nn.Module,
        data: Union[Dataset, DataLoader],
        stage: str = 'backbone',
        label_keys: Sequence[str] = (),
        batch_size: int = 64,
        num_workers: int = 0,
        progress: bool = False) -> Tuple[Tensor, Dict[str, Tensor]]:
    """:func:`batch_features` of every batch of a whole dataset, in order,
    outside a runner (analysis tools, ``tools/linear_probe_cached.py``).

    Args:
        model: A model in the desired (usually eval) mode.
        data: A dataset whose (test) pipeline packs ``inputs``, or a
            ``DataLoader`` (in index order for features in dataset order).
        stage: One of :data:`STAGES`.
        label_keys: Labels to collect (see :func:`sample_label`).
        batch_size: Batch size when ``data`` is a dataset.
        num_workers: DataLoader workers when ``data`` is a dataset.
        progress: Show a tqdm progress bar.

    Returns:
        Features of shape (N, D) (float32, CPU) and ``{key: LongTensor of
        shape (N,)}`` for every label key.
    """
    check_choice('stage', stage, STAGES)
    if not isinstance(data, DataLoader):
        data = DataLoader(
            data,
            batch_size=batch_size,
            shuffle=False,
            num_workers=num_workers,
            collate_fn=default_collate)
    feats: List[Tensor]
    labels: Dict[str, List[int]]
    feats, labels = [], {key: [] for key in label_keys}
    for batch in tqdm(data, desc=f'{stage} features', disable=not progress):
        feats.append(batch_features(model, batch, stage).float().cpu())
        for key in label_keys:
            labels[key] += [
                sample_label(s, key) for s in batch['data_samples']
            ]
    return torch.cat(feats) if feats else torch.zeros(0), {
        k: torch.tensor(v, dtype=torch.long)
        for k, v in labels.items()
    }
