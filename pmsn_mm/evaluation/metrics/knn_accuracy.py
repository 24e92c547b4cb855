"""Weighted k-NN accuracy on frozen features, as an mmengine val metric."""
from typing import Any, Dict, List, Optional, Sequence

import torch
from mmengine.evaluator import BaseMetric
from mmpretrain.evaluation import Accuracy
from mmpretrain.registry import METRICS
from torch import Tensor

from ..functional.features import sample_label
from ..functional.knn import weighted_knn_scores


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for dicts, ``obj.get(key)`` for data elements, or None."""
    if isinstance(obj, dict):
        return obj.get(key)
    getter = getattr(obj, 'get', None)
    return getter(key) if callable(getter) else None


@METRICS.register_module()
class KNNAccuracy(BaseMetric):
    """Top-k accuracy of a temperature-weighted cosine k-NN classifier.

    The protocol of the paper's kNN numbers (MSN/DINO): each query feature
    votes with its ``k`` most cosine-similar memory features, neighbour
    ``j`` adding ``exp(sim_j / temperature)`` to its class
    (:func:`pmsn_mm.evaluation.weighted_knn_scores`).

    Contract (mmengine's loop calls ``process(batch, outputs)``; with
    :class:`~pmsn_mm.engine.runners.FeatureValLoop` the outputs are the
    frozen features of the batch):

    - ``val_dataloader.dataset`` is a
      :class:`pmsn_mm.datasets.KNNEvalDataset` (memory split + query split),
      which tags every packed sample with ``metainfo[role_key]`` in
      ``{'memory', 'query'}``;
    - each output is a Tensor of shape (D,) (``FeatureValLoop``), or a data
      sample carrying the frozen feature under ``feature_key`` (a model
      whose ``predict`` sets ``sample.set_field(feat, 'features')``);
    - the label (``label_key``) and the role are read from the output when
      present, otherwise from the same sample of ``data_batch``.

    Features are moved to the CPU in ``process``; all ranks' results are
    gathered (``collect_device``) and scored on rank 0.

    Args:
        k: Number of neighbours. Defaults to 20.
        temperature: Vote temperature. Defaults to 0.07.
        topk: Accuracies to report, e.g. ``(1, 5)`` (mmpretrain's
            ``Accuracy.calculate``; a k above the number of classes C
            reports top-C, i.e. 100 %). Defaults to ``(1, )``.
        num_classes: Number of classes; None infers ``max label + 1``.
        feature_key: Field of the output holding the feature.
        label_key: Field holding the class label. Defaults to ``'gt_label'``.
        role_key: Metainfo field holding the role. Defaults to
            ``'knn_role'``.
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
        super().__init__(collect_device=collect_device, prefix=prefix)
        if k < 1:
            raise ValueError(f'k must be >= 1, got {k}.')
        if temperature <= 0:
            raise ValueError(f'temperature must be > 0, got {temperature}.')
        if not topk or any(int(t) < 1 for t in topk):
            raise ValueError(f'topk must be a non-empty sequence of ints '
                             f'>= 1, got {topk}.')
        if num_classes is not None and num_classes < 1:
            raise ValueError(f'num_classes must be >= 1, got {num_classes}.')
        self.k = k
        self.temperature = temperature
        self.topk = tuple(int(t) for t in topk)
        self.num_classes = num_classes
        self.feature_key = feature_key
        self.label_key = label_key
        self.role_key = role_key

    def _lookup(self, key: str, output: Any, reference: Any) -> Any:
        value = _get(output, key)
        if value is None and reference is not None:
            value = _get(reference, key)
        if value is None:
            raise KeyError(
                f"KNNAccuracy found no '{key}' in the model output or the "
                'data batch sample; wrap the val dataset in KNNEvalDataset '
                '(role) and keep the label in PackInputs.')
        return value

    def process(self, data_batch: Any, data_samples: Sequence) -> None:
        """Store feature, label and role of every sample of a batch.

        Args:
            data_batch: The dataloader batch (``{'inputs', 'data_samples'}``).
            data_samples: Model outputs, one per sample (see the contract).
        """
        batch_samples = _get(data_batch, 'data_samples')
        for i, output in enumerate(data_samples):
            reference = batch_samples[i] if batch_samples is not None \
                and i < len(batch_samples) else None
            is_tensor = isinstance(output, Tensor)
            source = None if is_tensor else output
            feature = output if is_tensor else _get(output, self.feature_key)
            if not isinstance(feature, Tensor):
                raise KeyError(
                    f"KNNAccuracy needs a Tensor feature per sample under "
                    f"'{self.feature_key}' (or the output itself), got "
                    f'{type(feature).__name__}.')
            label = sample_label(
                {self.label_key: self._lookup(self.label_key, source,
                                              reference)}, self.label_key)
            role = self._lookup(self.role_key, source, reference)
            self.results.append(
                dict(
                    feature=feature.detach().float().reshape(-1).cpu(),
                    label=label,
                    role=str(role)))

    def compute_metrics(self, results: List[dict]) -> Dict[str, float]:
        """Top-k accuracies (in %) of the query samples.

        Args:
            results: Gathered outputs of :meth:`process`.

        Returns:
            ``{'top1': ..., 'top5': ...}`` for the requested ``topk``.
        """
        roles = {r['role'] for r in results}
        if not roles <= {'memory', 'query'}:
            raise ValueError(f"'{self.role_key}' must be 'memory' or "
                             f"'query', got {sorted(roles)}.")
        memory = [r for r in results if r['role'] == 'memory']
        query = [r for r in results if r['role'] == 'query']
        if not memory or not query:
            raise ValueError(
                f'KNNAccuracy needs memory and query samples, got '
                f'{len(memory)} memory and {len(query)} query samples.')
        mem_feats = torch.stack([r['feature'] for r in memory])
        mem_labels = torch.tensor([r['label'] for r in memory])
        qry_feats = torch.stack([r['feature'] for r in query])
        qry_labels = torch.tensor([r['label'] for r in query])
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
