"""Low-shot logistic-regression evaluation of frozen features.

``C`` is chosen on a seeded, class-stratified validation split of the
*training* features (:func:`select_regularization` only ever receives
training arrays; VISSL's low-shot benchmarks pick it on the test set),
then the classifier is refit on all training features and scored once.
"""
from dataclasses import dataclass
from typing import Any, Dict, Sequence, Tuple

import numpy as np

#: Default grid of inverse regularisation strengths C (= 1 / lambda).
DEFAULT_CS: Tuple[float, ...] = (0.01, 0.1, 1.0, 10.0, 100.0)


@dataclass(frozen=True)
class LogisticEvalResult:
    """Outcome of :func:`select_and_evaluate`.

    Args:
        best_c: The chosen C.
        val_accuracy: Validation accuracy (%) of every C of the grid.
        test_accuracy: Test accuracy (%) of the refit classifier.
    """

    best_c: float
    val_accuracy: Dict[float, float]
    test_accuracy: float


def _features(feats: Any, normalize: bool) -> np.ndarray:
    arr = np.asarray(feats, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f'features must have shape (N, D), got {arr.shape}.')
    if normalize:
        arr = arr / np.maximum(np.linalg.norm(arr, axis=1, keepdims=True),
                               1e-12)
    return arr


def _labels(labels: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(labels).astype(np.int64).reshape(-1)
    if len(arr) != n:
        raise ValueError(f'{name} has {len(arr)} labels for {n} features.')
    return arr


def stratified_holdout(labels: np.ndarray, val_fraction: float,
                       seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Seeded, class-stratified split of indices into fit and val parts.

    ``min(round(val_fraction * n_c), n_c - 1)`` images of each class go to
    the val part, so every class keeps one to fit on.

    Kept instead of sklearn's ``train_test_split(stratify=...)`` /
    ``StratifiedShuffleSplit``: they raise on a class with one image (low-shot
    sets) instead of keeping it whole in the fit part.

    Args:
        labels: Int array of shape (N,).
        val_fraction: Fraction of every class held out, in (0, 1).
        seed: Seed of the per-class permutations.

    Returns:
        ``(fit_indices, val_indices)``, both sorted.
    """
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(
            f'val_fraction must be in (0, 1), got {val_fraction}.')
    rng = np.random.default_rng(seed)
    fit, val = [], []
    for cls in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == cls))
        n_val = min(int(round(val_fraction * len(members))), len(members) - 1)
        val.append(members[:n_val])
        fit.append(members[n_val:])
    fit_idx = np.sort(np.concatenate(fit)) if fit else np.zeros(0, int)
    val_idx = np.sort(np.concatenate(val)) if val else np.zeros(0, int)
    if len(val_idx) == 0:
        raise ValueError(
            f'val_fraction={val_fraction} holds out no training image (every '
            'class is too small); raise val_fraction or use more images.')
    return fit_idx, val_idx


def _classifier(c: float, max_iter: int,
                seed: int):
    # imported here: importing pmsn_mm (and this module) loads no sklearn
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=c, max_iter=max_iter, random_state=seed)


def _accuracy(clf, feats: np.ndarray,
              labels: np.ndarray) -> float:
    return float((clf.predict(feats) == labels).mean() * 100)


def select_regularization(train_feats: np.ndarray,
                          train_labels: np.ndarray,
                          cs: Sequence[float] = DEFAULT_CS,
                          val_fraction: float = 0.2,
                          seed: int = 0,
                          max_iter: int = 1000
                          ) -> Tuple[float, Dict[float, float]]:
    """Choose C on a validation split of the training set only.

    sklearn's ``GridSearchCV`` over the ``PredefinedSplit`` of
    :func:`stratified_holdout`.

    Args:
        train_feats: Float array of shape (N, D) (already normalised).
        train_labels: Int array of shape (N,).
        cs: Grid of C values (> 0).
        val_fraction: Fraction of every class held out for validation.
        seed: Seed of the split and the solver.
        max_iter: Solver iterations.

    Returns:
        ``(best C, {C: val accuracy in %})``; ties go to the smallest C
        (the strongest regularisation).
    """
    from sklearn.model_selection import GridSearchCV, PredefinedSplit
    _, val_idx = stratified_holdout(train_labels, val_fraction, seed)
    test_fold = np.full(len(train_labels), -1)
    test_fold[val_idx] = 0  # one split: fit on the rest, score on val_idx
    grid = sorted(cs)
    search = GridSearchCV(
        _classifier(grid[0], max_iter, seed), {'C': grid},
        scoring='accuracy',
        cv=PredefinedSplit(test_fold),
        refit=False,
        error_score='raise').fit(train_feats, train_labels)
    val_accuracy = {
        c: float(acc * 100)
        for c, acc in zip(grid, search.cv_results_['mean_test_score'])
    }
    best = max(val_accuracy.values())
    best_c = min(c for c, acc in val_accuracy.items() if acc == best)
    return best_c, val_accuracy


def select_and_evaluate(train_feats: Any,
                        train_labels: Any,
                        test_feats: Any,
                        test_labels: Any,
                        cs: Sequence[float] = DEFAULT_CS,
                        val_fraction: float = 0.2,
                        seed: int = 0,
                        max_iter: int = 1000,
                        normalize: bool = True) -> LogisticEvalResult:
    """Pick C on a train-carved val split, refit on all train, test once.

    Args:
        train_feats: Array/tensor of shape (N, D).
        train_labels: Array/tensor of shape (N,).
        test_feats: Array/tensor of shape (M, D).
        test_labels: Array/tensor of shape (M,); read only after C is chosen.
        cs: Grid of C values (> 0).
        val_fraction: Fraction of every training class held out to choose C.
        seed: Seed of the split and the solver.
        max_iter: Solver iterations.
        normalize: L2-normalise every feature first.

    Returns:
        A :class:`LogisticEvalResult` (accuracies in %).
    """
    cs = tuple(float(c) for c in cs)
    if not cs or any(c <= 0 for c in cs):
        raise ValueError(f'cs must be a non-empty sequence of values > 0, '
                         f'got {cs}.')
    train_x = _features(train_feats, normalize)
    train_y = _labels(train_labels, len(train_x), 'train_labels')
    test_x = _features(test_feats, normalize)
    if test_x.shape[1] != train_x.shape[1]:
        raise ValueError(f'test features have dimension {test_x.shape[1]}, '
                         f'train features {train_x.shape[1]}.')
    best_c, val_accuracy = select_regularization(train_x, train_y, cs,
                                                 val_fraction, seed, max_iter)
    # Test labels are touched only from here on.
    test_y = _labels(test_labels, len(test_x), 'test_labels')
    clf = _classifier(best_c, max_iter, seed).fit(train_x, train_y)
    return LogisticEvalResult(best_c, val_accuracy,
                              _accuracy(clf, test_x, test_y))
