"""Official MSN's low-shot logistic regression on frozen features, as an
mmengine metric."""
from typing import Dict, List, Optional

from mmpretrain.registry import METRICS

from ...utils.validation import check_int, check_positive
from ..functional.msn_logistic import DEFAULT_LAMBD, evaluate_msn_logistic
from .frozen_features import FrozenFeatureMetric


@METRICS.register_module()
class MSNLogisticRegressionAccuracy(FrozenFeatureMetric):
    """Top-1 accuracy of official MSN's ``logistic_eval.py`` problem, fit on
    the memory (train) features and scored on the query (test) features.

    The MSN paper's low-shot protocol (fixed regularisation; scikit-learn
    with ``C = 1 / lambd``, :mod:`pmsn_mm.evaluation.functional.msn_logistic`),
    comparable with the official script, unlike
    :class:`LogisticRegressionAccuracy`.

    Args:
        lambd: The official ``--lambd`` (> 0; the README's command: 0.0025).
        tol: lbfgs tolerance (> 0), relative to the largest gradient
            entry of the objective above at ``W = 0``.
        max_iter: lbfgs iterations at most (>= 1).
        feature_key: Field of the output holding the feature.
        label_key: Field holding the class label. Defaults to ``'gt_label'``.
        role_key: Metainfo field of the role. Defaults to ``'knn_role'``.
        collect_device: ``'cpu'`` or ``'gpu'`` (for result gathering).
        prefix: Metric name prefix. Defaults to ``'msn_logreg'``.
    """

    default_prefix: Optional[str] = 'msn_logreg'

    def __init__(self,
                 lambd: float = DEFAULT_LAMBD,
                 tol: float = 1e-6,
                 max_iter: int = 3000,
                 feature_key: str = 'features',
                 label_key: str = 'gt_label',
                 role_key: str = 'knn_role',
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(feature_key, label_key, role_key, collect_device,
                         prefix)
        self.lambd = check_positive('MSNLogisticRegressionAccuracy lambd',
                                    lambd)
        self.tol = check_positive('MSNLogisticRegressionAccuracy tol', tol)
        self.max_iter = check_int('MSNLogisticRegressionAccuracy max_iter',
                                  max_iter, 1)

    def compute_metrics(self, results: List[dict]) -> Dict[str, float]:
        """Test and training accuracy (in %).

        Args:
            results: Gathered outputs of :meth:`process`.

        Returns:
            ``{'top1': ..., 'train_top1': ...}``.
        """
        train_x, train_y, test_x, test_y = self.split(results)
        result = evaluate_msn_logistic(
            train_x.numpy(), train_y.numpy(), test_x.numpy(), test_y.numpy(),
            lambd=self.lambd, tol=self.tol, max_iter=self.max_iter)
        return dict(top1=result.test_accuracy,
                    train_top1=result.train_accuracy)
