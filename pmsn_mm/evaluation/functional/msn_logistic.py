"""Official MSN's low-shot logistic regression, solved by scikit-learn.

facebookresearch/msn ``logistic_eval.py`` (the 1, 2, 5 images per class and
1 % ImageNet numbers of the MSN paper) fits cyanure's multinomial logistic
regression on frozen features:

1. ``cyan.preprocess(X, normalize=True, columns=False, centering=True)`` on
   the training and, separately, the test features: every *row* centred on
   its own mean, then scaled to unit L2 norm (in that order);
2. ``MultiClassifier(loss='multiclass-logistic', penalty='l2',
   fit_intercept=False).fit(X, y, lambd=lambd / N, tol=1e-3,
   max_epochs=300, ...)``, i.e. cyanure minimises over ``W`` (``D x K``)

   ``F(W) = (1 / N) sum_i CE(W^T x_i, y_i) + (lambda / 2) ||W||_F^2``,
   ``lambda = lambd / N``

   (cyanure's ``Ridge`` regulariser is ``lambda_1 / 2 ||w||^2``; its
   multiclass logistic loss is the softmax cross-entropy averaged over the
   N samples); the official README command uses ``lambd = 0.0025``;
3. the prediction is ``argmax_k (W^T x)_k``.

scikit-learn's ``LogisticRegression`` (lbfgs, multinomial for K > 2 classes,
``fit_intercept=False``) minimises ``C sum_i CE_i + 1/2 ||W||_F^2``, which is
``F`` times ``1 / (lambda N)``: the same minimiser when ``C = 1 / (lambda N) =
1 / lambd`` (:func:`msn_logistic_c`). With K = 2 classes scikit-learn fits one
vector ``d`` instead (the binary logistic loss of ``d^T x``); the multinomial
optimum is ``W = [-d/2, d/2]`` (the loss depends on ``w_1 - w_0`` only, and
``||w_0||^2 + ||w_1||^2`` is smallest at ``w_1 = -w_0``), whose penalty is
``lambda / 4 ||d||^2``, so there ``C = 2 / lambd``.

scikit-learn is imported only when a regression is fit.
"""
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...utils.validation import check_int, check_positive

#: ``lambd`` of the official README's ``logistic_eval.py`` command.
DEFAULT_LAMBD = 0.0025


@dataclass(frozen=True)
class MSNLogisticResult:
    """Outcome of :func:`evaluate_msn_logistic`.

    Args:
        test_accuracy: Top-1 on the test features (%).
        train_accuracy: Top-1 on the training features (%; as official).
        predictions: Predicted class of every test sample, shape (M,).
        weights: ``W``, shape (D, K); column ``k`` scores ``classes[k]``.
        classes: The class labels of the columns of ``weights``, sorted.
        n_iter: Iterations the solver ran.
    """

    test_accuracy: float
    train_accuracy: float
    predictions: np.ndarray
    weights: np.ndarray
    classes: np.ndarray
    n_iter: int


def center_normalize_rows(feats: Any) -> np.ndarray:
    """cyanure's ``preprocess(X, centering=True, normalize=True,
    columns=False)``: every row minus its mean, then divided by its L2 norm.

    A row whose centred norm is at most 1e-10 (a constant feature vector)
    stays zero (cyanure replaces it by a random unit vector).

    Args:
        feats: Array or tensor of shape (N, D).

    Returns:
        float64 array of shape (N, D) (a new array; the input is kept).
    """
    if isinstance(feats, torch.Tensor):
        feats = feats.detach().cpu().numpy()
    arr = np.array(feats, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f'features must have shape (N, D), got {arr.shape}.')
    arr -= arr.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return np.divide(arr, norms, out=np.zeros_like(arr),
                     where=norms > 1e-10)


def msn_logistic_c(lambd: float, num_classes: int) -> float:
    """scikit-learn's ``C`` for the official problem (module docstring).

    Args:
        lambd: The official ``--lambd`` (cyanure gets ``lambd / N``).
        num_classes: Classes in the training labels (>= 2).

    Returns:
        ``1 / lambd``, or ``2 / lambd`` for two classes.
    """
    lambd = check_positive('lambd', lambd)
    if num_classes < 2:
        raise ValueError('the training labels must hold at least 2 classes, '
                         f'got {num_classes}.')
    return (2.0 if num_classes == 2 else 1.0) / lambd


def _labels(labels: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(labels).astype(np.int64).reshape(-1)
    if len(arr) != n:
        raise ValueError(f'{name} has {len(arr)} labels for {n} features.')
    return arr


def evaluate_msn_logistic(train_feats: Any,
                          train_labels: Any,
                          test_feats: Any,
                          test_labels: Any,
                          lambd: float = DEFAULT_LAMBD,
                          tol: float = 1e-6,
                          max_iter: int = 3000) -> MSNLogisticResult:
    """Fit the official problem on the training features, score the test
    features (both preprocessed by :func:`center_normalize_rows`).

    Args:
        train_feats: Array/tensor of shape (N, D).
        train_labels: Array/tensor of shape (N,).
        test_feats: Array/tensor of shape (M, D).
        test_labels: Array/tensor of shape (M,).
        lambd: The official ``--lambd`` (> 0).
        tol: Relative tolerance: lbfgs stops when every gradient entry of
            ``F`` is below ``tol`` times the largest at ``W = 0`` (an
            absolute one would stop a 1000-class problem before it starts).
        max_iter: lbfgs iterations at most.

    Returns:
        A :class:`MSNLogisticResult`.
    """
    from sklearn.linear_model import LogisticRegression
    lambd = check_positive('lambd', lambd)
    tol = check_positive('tol', tol)
    max_iter = check_int('max_iter', max_iter, 1)
    train_x = center_normalize_rows(train_feats)
    test_x = center_normalize_rows(test_feats)
    if test_x.shape[1] != train_x.shape[1]:
        raise ValueError(f'test features have dimension {test_x.shape[1]}, '
                         f'train features {train_x.shape[1]}.')
    train_y = _labels(train_labels, len(train_x), 'train_labels')
    test_y = _labels(test_labels, len(test_x), 'test_labels')
    classes, index = np.unique(train_y, return_inverse=True)
    # gradient of F at W = 0: X^T (1/K - onehot(y)) / N, as (K, D)
    class_sums = np.zeros((len(classes), train_x.shape[1]))
    np.add.at(class_sums, index, train_x)
    grad0 = (train_x.sum(axis=0) / len(classes) - class_sums) / len(index)
    clf = LogisticRegression(
        C=msn_logistic_c(lambd, len(classes)), fit_intercept=False,
        tol=tol * float(np.abs(grad0).max()), max_iter=max_iter,
        solver='lbfgs')
    with warnings.catch_warnings():
        # low-shot sets have more classes than half their samples, by design
        warnings.filterwarnings(
            'ignore', message='The number of unique classes is greater than',
            category=UserWarning)
        clf.fit(train_x, train_y)
    coef = np.asarray(clf.coef_, dtype=np.float64)
    weights = np.stack([-coef[0] / 2, coef[0] / 2], axis=1) \
        if len(classes) == 2 else coef.T
    pred = classes[np.argmax(test_x @ weights, axis=1)]
    train_pred = classes[np.argmax(train_x @ weights, axis=1)]
    return MSNLogisticResult(
        test_accuracy=float((pred == test_y).mean() * 100),
        train_accuracy=float((train_pred == train_y).mean() * 100),
        predictions=pred, weights=weights, classes=classes,
        n_iter=int(np.max(clf.n_iter_)))
