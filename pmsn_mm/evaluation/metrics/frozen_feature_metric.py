"""Base of the metrics on frozen features of a memory (train) split and a
query (test) split, gathered in one pass by a feature loop."""
from typing import Any, List, Optional, Sequence, Tuple

import torch
from mmengine.evaluator import BaseMetric
from torch import Tensor

from ..functional.features import sample_label
from .cpu_copies import cpu_copies


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for dicts, ``obj.get(key)`` for data elements, or None."""
    if isinstance(obj, dict):
        return obj.get(key)
    getter = getattr(obj, 'get', None)
    return getter(key) if callable(getter) else None


class FrozenFeatureMetric(BaseMetric):
    """Collects ``(feature, label, role)`` per sample; subclasses score.

    Contract (mmengine's loop calls ``process(batch, outputs)``; with
    :class:`~pmsn_mm.engine.runners.FeatureValLoop` /
    :class:`~pmsn_mm.engine.runners.FeatureTestLoop` the outputs are the
    frozen features of the batch):

    - the dataset is a :class:`pmsn_mm.datasets.KNNEvalDataset` (memory
      split + query split), which tags every packed sample with
      ``metainfo[role_key]`` in ``{'memory', 'query'}``;
    - each output is a Tensor of shape (D,), or a data sample carrying the
      frozen feature under ``feature_key``;
    - the label (``label_key``) and the role are read from the output when
      present, otherwise from the same sample of ``data_batch``.

    Features are copied to the CPU in ``process``; all ranks' results are
    gathered (``collect_device``) and scored on rank 0 by the subclass's
    ``compute_metrics`` (:meth:`split` gives the two splits).

    Args:
        feature_key: Field of the output holding the feature.
        label_key: Field holding the class label. Defaults to ``'gt_label'``.
        role_key: Metainfo field holding the role. Defaults to
            ``'knn_role'``.
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
        """Store feature, label and role of every sample of a batch.

        The features are kept as float32 CPU copies that own their memory
        (:func:`~pmsn_mm.evaluation.metrics.cpu_copies.cpu_copies`), not
        views of the batch's output, which would keep and, when the ranks'
        results are gathered, pickle the whole batch for every sample.

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
