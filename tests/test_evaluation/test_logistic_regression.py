"""Low-shot logistic regression: C is chosen without reading test labels."""
import inspect

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from pmsn_mm.evaluation.functional import logistic_regression as lr
from pmsn_mm.evaluation.functional.logistic_regression import (
    select_and_evaluate, select_regularization, stratified_holdout)

CS = (0.01, 0.1, 1.0, 10.0)


def _blobs(seed, per_class, classes=4, dim=8, spread=1.5):
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).normal(size=(classes, dim)) * 2
    labels = np.repeat(np.arange(classes), per_class)
    return centres[labels] + spread * rng.normal(size=(len(labels), dim)), \
        labels


class GuardedLabels:
    """Test labels that refuse to be read until ``allowed`` is set."""

    def __init__(self, labels):
        self.labels = np.asarray(labels)
        self.allowed = False

    def __array__(self, dtype=None, copy=None):
        if not self.allowed:
            raise AssertionError('test labels read before C was chosen')
        return self.labels if dtype is None else self.labels.astype(dtype)

    def __len__(self):
        raise AssertionError('test labels inspected before C was chosen')


def test_test_labels_are_not_read_during_selection(monkeypatch):
    train_x, train_y = _blobs(0, 10)
    test_x, test_y = _blobs(1, 25)
    guard = GuardedLabels(test_y)
    original = lr.select_regularization

    def select_then_allow(*args, **kwargs):
        result = original(*args, **kwargs)
        guard.allowed = True
        return result

    monkeypatch.setattr(lr, 'select_regularization', select_then_allow)
    result = select_and_evaluate(train_x, train_y, test_x, guard, cs=CS)
    assert guard.allowed  # selection ran, and test labels came after it
    assert result.test_accuracy > 80.0


def test_guard_does_trip_when_labels_are_read():
    # the guard above would catch a read: the final scoring needs the labels
    train_x, train_y = _blobs(0, 10)
    test_x, test_y = _blobs(1, 5)
    with pytest.raises(AssertionError, match='before C was chosen'):
        select_and_evaluate(train_x, train_y, test_x, GuardedLabels(test_y),
                            cs=CS)


def test_garbage_test_labels_do_not_change_the_choice():
    train_x, train_y = _blobs(2, 10)
    test_x, test_y = _blobs(3, 25)
    real = select_and_evaluate(train_x, train_y, test_x, test_y, cs=CS)
    perm = np.random.default_rng(0).permutation(test_y)
    garbage = select_and_evaluate(train_x, train_y, test_x, perm, cs=CS)
    assert garbage.best_c == real.best_c
    assert garbage.val_accuracy == real.val_accuracy
    assert garbage.test_accuracy < real.test_accuracy


def test_selection_signature_has_no_test_inputs():
    params = inspect.signature(select_regularization).parameters
    assert not [name for name in params if 'test' in name]


def test_choice_matches_a_reference_on_the_train_split():
    train_x, train_y = _blobs(4, 10, spread=3.0)
    test_x, test_y = _blobs(5, 10, spread=3.0)
    result = select_and_evaluate(train_x, train_y, test_x, test_y, cs=CS,
                                 val_fraction=0.3, seed=5)
    # reference: same split, plain sklearn, best val accuracy (ties -> low C)
    x = train_x / np.linalg.norm(train_x, axis=1, keepdims=True)
    fit, val = stratified_holdout(train_y, 0.3, 5)
    accs = {}
    for c in CS:
        clf = LogisticRegression(C=c, max_iter=1000, random_state=5)
        clf.fit(x[fit], train_y[fit])
        accs[c] = 100.0 * np.mean(clf.predict(x[val]) == train_y[val])
    best = max(accs.values())
    assert result.val_accuracy == pytest.approx(accs)
    assert result.best_c == min(c for c in CS if accs[c] == best)
    clf = LogisticRegression(C=result.best_c, max_iter=1000, random_state=5)
    clf.fit(x, train_y)
    xt = test_x / np.linalg.norm(test_x, axis=1, keepdims=True)
    assert result.test_accuracy == pytest.approx(
        100.0 * np.mean(clf.predict(xt) == test_y))


def test_stratified_holdout_is_seeded_and_keeps_every_class():
    labels = np.repeat([0, 1, 2], [10, 5, 1])
    fit, val = stratified_holdout(labels, 0.2, seed=0)
    assert sorted(np.concatenate([fit, val]).tolist()) == list(range(16))
    assert np.bincount(labels[val], minlength=3).tolist() == [2, 1, 0]
    assert set(labels[fit].tolist()) == {0, 1, 2}
    again, _ = stratified_holdout(labels, 0.2, seed=0)
    other, _ = stratified_holdout(labels, 0.2, seed=1)
    assert np.array_equal(fit, again) and not np.array_equal(fit, other)


def test_errors():
    x, y = _blobs(0, 5)
    with pytest.raises(ValueError, match=r'val_fraction must be in \(0, 1\)'):
        select_and_evaluate(x, y, x, y, val_fraction=1.0)
    with pytest.raises(ValueError, match='cs must be'):
        select_and_evaluate(x, y, x, y, cs=(0.0, 1.0))
    with pytest.raises(ValueError, match='train_labels has 3 labels'):
        select_and_evaluate(x, y[:3], x, y)
    with pytest.raises(ValueError, match='holds out no training image'):
        stratified_holdout(np.array([0, 1, 2]), 0.2, seed=0)
