"""Logistic-regression accuracy on frozen features, as an mmengine metric."""
from typing import Dict, List, Optional, Sequence

from mmpretrain.registry import METRICS

from ...utils.validation import check_int, check_number, check_positive
from ..functional.logistic_regression import DEFAULT_CS, select_and_evaluate
from .frozen_features import FrozenFeatureMetric


@METRICS.register_module()
class LogisticRegressionAccuracy(FrozenFeatureMetric):
    """Top-1 accuracy of a logistic regression fit on the memory (train)
    features and scored on the query (test) features.

    ``C`` chosen on a class-stratified split of the *training* features,
    refit, scored once on the test split
    (:func:`pmsn_mm.evaluation.functional.logistic_regression.select_and_evaluate`).

    Args:
        cs: Grid of C values (> 0).
        val_fraction: Share of each class held out to choose C, in (0, 1).
        seed: Seed of the split and the solver.
        max_iter: Solver iterations.
        normalize: L2-normalise the features first.
        feature_key: Field of the output holding the feature.
        label_key: Field holding the class label. Defaults to ``'gt_label'``.
        role_key: Metainfo field of the role. Defaults to ``'knn_role'``.
        collect_device: ``'cpu'`` or ``'gpu'`` (for result gathering).
        prefix: Metric name prefix. Defaults to ``'logreg'``.
    """

    default_prefix: Optional[str] = 'logreg'

    def __init__(self,
                 cs: Sequence[float] = DEFAULT_CS,
                 val_fraction: float = 0.2,
                 seed: int = 0,
                 max_iter: int = 1000,
                 normalize: bool = True,
                 feature_key: str = 'features',
                 label_key: str = 'gt_label',
                 role_key: str = 'knn_role',
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(feature_key, label_key, role_key, collect_device,
                         prefix)
        if not cs:
            raise ValueError('LogisticRegressionAccuracy cs must be a '
                             f'non-empty sequence of values > 0, got {cs!r}.')
        self.cs = tuple(
            check_positive('LogisticRegressionAccuracy cs', c) for c in cs)
        self.val_fraction = check_number(
            'LogisticRegressionAccuracy val_fraction', val_fraction, 0, 1,
            low_open=True, high_open=True)
        self.seed = seed
        self.max_iter = check_int('LogisticRegressionAccuracy max_iter',
                                  max_iter, 1)
        self.normalize = normalize

    def compute_metrics(self, results: List[dict]) -> Dict[str, float]:
        """Test accuracy (in %) and the chosen C.

        Args:
            results: Gathered outputs of :meth:`process`.

        Returns:
            ``{'top1': ..., 'best_c': ...}``.
        """
        train_x, train_y, test_x, test_y = self.split(results)
        result = select_and_evaluate(
            train_x.numpy(), train_y.numpy(), test_x.numpy(), test_y.numpy(),
            cs=self.cs, val_fraction=self.val_fraction, seed=self.seed,
            max_iter=self.max_iter, normalize=self.normalize)
        return dict(top1=result.test_accuracy, best_c=result.best_c)
