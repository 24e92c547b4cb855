import numpy as np
import pytest
import torch
from mmpretrain.registry import MODELS
from torch.utils.data import ConcatDataset, Subset

from pmsn_mm.models.priors import ClassPrior
from pmsn_mm.utils.labels import label_counts


class _FakeDataset:
    """Minimal stand-in for an mmpretrain BaseDataset."""

    def __init__(self, labels, classes=None):
        self.labels = labels
        self.CLASSES = classes

    def __len__(self):
        return len(self.labels)

    def get_gt_labels(self):
        return np.asarray(self.labels)


def test_class_prior_from_counts():
    prior = MODELS.build(
        dict(type='ClassPrior', counts=[6, 3, 1]),
        default_args=dict(num_prototypes=3))
    torch.testing.assert_close(
        prior.probs, torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64))
    assert prior.num_classes == 3 and not prior.is_uniform
    assert not prior.state_dict()  # a function of the config


def test_class_prior_from_dataset_instance():
    labels = [0, 2, 2, 1, 2, 0, 2]  # bincount [2, 1, 4]
    prior = ClassPrior(3, dataset=_FakeDataset(labels))
    torch.testing.assert_close(
        prior.probs,
        torch.tensor([2 / 7, 1 / 7, 4 / 7], dtype=torch.float64))


def test_class_prior_from_dataset_config():
    # A class as ``type`` is built by mmengine's Registry.build.
    prior = ClassPrior(2, dataset=dict(type=_FakeDataset, labels=[1, 1, 1, 0]))
    torch.testing.assert_close(
        prior.probs, torch.tensor([0.25, 0.75], dtype=torch.float64))


def test_class_prior_equal_counts_are_uniform():
    prior = ClassPrior(3, counts=[5, 5, 5])
    assert prior.is_uniform and prior.sinkhorn_marginal() is None


def test_class_prior_missing_class_is_a_zero_entry():
    # CLASSES has 3 entries but class 2 never occurs.
    dataset = _FakeDataset([0, 1, 1], classes=('a', 'b', 'c'))
    with pytest.raises(
            ValueError, match=r'class counts must be > 0.*\[2\].*infinite'):
        ClassPrior(3, dataset=dataset)


def test_class_prior_length_must_equal_num_prototypes():
    with pytest.raises(
            ValueError,
            match='ClassPrior counts has length 3.*'
            'num_prototypes=4'):
        ClassPrior(4, counts=[1, 2, 3])
    with pytest.raises(
            ValueError,
            match='ClassPrior dataset class counts has length 2.*'
            'num_prototypes=3'):
        ClassPrior(3, dataset=_FakeDataset([0, 1, 1]))


def test_class_prior_needs_exactly_one_source():
    with pytest.raises(ValueError, match='exactly one of counts and dataset'):
        ClassPrior(1)
    with pytest.raises(ValueError, match='exactly one of counts and dataset'):
        ClassPrior(1, counts=[1], dataset=_FakeDataset([0]))


@pytest.mark.parametrize('counts, match', [
    ([1, float('nan')], 'ClassPrior counts must be finite'),
    ([1, -2], 'ClassPrior counts must be >= 0'),
    ([0, 0], 'ClassPrior counts must not be all zero'),
    ([3, 0], 'ClassPrior counts must be > 0 .*infinite'),
])
def test_class_prior_invalid_counts(counts, match):
    with pytest.raises(ValueError, match=match):
        ClassPrior(2, counts=counts)


def test_class_prior_dataset_without_labels_api():
    with pytest.raises(
            ValueError, match='ClassPrior dataset must have '
            'get_gt_labels'):
        ClassPrior(1, dataset=object())


def test_class_prior_reads_wrapped_datasets():
    # the samplers' label lookup: wrappers are unwrapped, no sample loaded
    labels = [0, 2, 2, 1]
    subset = Subset(_FakeDataset(labels), [0, 1, 2, 3, 3])  # 0 2 2 1 1
    prior = ClassPrior(3, dataset=ConcatDataset([subset, _FakeDataset([0])]))
    torch.testing.assert_close(
        prior.probs,
        torch.tensor([2 / 6, 2 / 6, 2 / 6], dtype=torch.float64))
    prior = ClassPrior(3, dataset=subset)
    torch.testing.assert_close(
        prior.probs,
        torch.tensor([1 / 5, 2 / 5, 2 / 5], dtype=torch.float64))


def test_class_prior_negative_labels():
    with pytest.raises(
            ValueError, match='ClassPrior dataset labels must be '
            'integers >= 0'):
        ClassPrior(2, dataset=_FakeDataset([0, -1, 1]))


def test_label_counts():
    # moved to pmsn_mm.utils.labels (shared with the samplers)
    np.testing.assert_array_equal(
        label_counts(_FakeDataset([0, 2, 2])), [1, 0, 2])
    np.testing.assert_array_equal(
        label_counts(_FakeDataset([0, 0], classes=('a', 'b', 'c'))),
        [2, 0, 0])
    with pytest.raises(ValueError, match='dataset has no labels'):
        label_counts(_FakeDataset([]))
    with pytest.raises(ValueError, match='my data must have get_gt_labels'):
        label_counts(object(), 'my data')
