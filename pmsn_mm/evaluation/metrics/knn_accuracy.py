"""Weighted k-NN accuracy on frozen features, as an mmengine metric."""
from typing import Dict, List, Optional, Sequence

from mmpretrain.evaluation import Accuracy
from mmpretrain.registry import METRICS

from ...utils.validation import check_int, check_positive
from ..functional.knn import weighted_knn_scores
from .frozen_feature_metric import FrozenFeatureMetric


@METRICS.register_module()
class KNNAccuracy(FrozenFeatureMetric):
    """Top-k accuracy of a temperature-weighted cosine k-NN classifier.

    The protocol of the paper's kNN numbers (MSN/DINO): each query feature
    votes with its ``k`` most cosine-similar memory features, neighbour
    ``j`` adding ``exp(sim_j / temperature)`` to its class
    (:func:`pmsn_mm.evaluation.weighted_knn_scores`). Features, labels and
    roles are collected as :class:`FrozenFeatureMetric` says (a
    ``KNNEvalDataset`` through ``FeatureValLoop`` / ``FeatureTestLoop``).

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
