from unittest import mock

import numpy as np
import pytest
from mmengine.dataset import DefaultSampler
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from scipy import stats
from torch.utils.data import DataLoader

from pmsn_mm.datasets.samplers import (ClassFrequencySampler,
                                       class_frequency_probs,
                                       frequency_epoch_indices)
from pmsn_mm.datasets.samplers.utils import make_rng

DIST_INFO = 'pmsn_mm.datasets.samplers.class_aware_sampler.get_dist_info'
COUNTS = np.array([1, 4, 9, 25, 64, 150])


class FakeDataset:
    """mmpretrain-like: labels from ``get_gt_labels()``; items are indices."""

    def __init__(self, labels):
        self.labels = np.asarray(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return int(idx)

    def get_gt_labels(self):
        return self.labels


def make_labels(seed=0):
    labels = np.repeat(np.arange(len(COUNTS)) * 10, COUNTS)  # ids 0..50
    np.random.default_rng(seed).shuffle(labels)
    return labels


def make(labels, world=1, rank=0, **kwargs):
    kwargs.setdefault('seed', 5)
    with mock.patch(DIST_INFO, return_value=(rank, world)):
        return ClassFrequencySampler(FakeDataset(labels), **kwargs)


def draw(sampler, epochs):
    out = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        out.extend(sampler)
    return np.asarray(out)


@pytest.mark.parametrize('power', [0.5, 1.0, 0.0, -0.5])
def test_class_frequencies_follow_power(power):
    labels = make_labels()
    sampler = make(labels, power=power)
    indices = draw(sampler, 200)  # 200 * 253 = 50,600 draws
    observed = np.array([(labels[indices] == 10 * c).sum()
                         for c in range(len(COUNTS))])
    expected_p = COUNTS**power / (COUNTS**power).sum()
    np.testing.assert_allclose(sampler.class_probs, expected_p)
    _, p_value = stats.chisquare(observed, expected_p * len(indices))
    assert p_value > 1e-3
    # The test has power: the other exponents are rejected.
    for other in {0.5, 1.0, 0.0, -0.5} - {power}:
        wrong = COUNTS**other / (COUNTS**other).sum()
        assert stats.chisquare(observed, wrong * len(indices))[1] < 1e-6


def test_power_one_is_uniform_over_images_and_within_class_uniform():
    labels = make_labels(1)
    indices = draw(make(labels, power=1.0), 200)
    image_counts = np.bincount(indices, minlength=len(labels))
    assert stats.chisquare(image_counts)[1] > 1e-3
    # Within the largest class, images are equally likely for any power.
    big = np.flatnonzero(labels == 50)
    for power in (0.5, 0.0):
        indices = draw(make(labels, power=power), 200)
        within = np.bincount(indices, minlength=len(labels))[big]
        assert stats.chisquare(within)[1] > 1e-3
        assert set(labels[indices]) == set(labels)


def test_probs_are_normalised_and_stable():
    probs = class_frequency_probs(np.array([1, 4, 16]), 0.5)
    np.testing.assert_allclose(probs, [1 / 7, 2 / 7, 4 / 7])
    huge = class_frequency_probs(np.array([1, 10**6]), 300.0)
    assert np.all(np.isfinite(huge)) and huge.sum() == pytest.approx(1)


@pytest.mark.parametrize('world', [2, 3, 4])
@pytest.mark.parametrize('round_up', [True, False])
def test_ranks_are_disjoint_slices_of_one_stream(world, round_up):
    labels = make_labels()
    ds = FakeDataset(labels)
    stream = None
    for rank in range(world):
        sampler = make(labels, world, rank, power=0.5, round_up=round_up)
        sampler.set_epoch(4)
        if stream is None:
            stream = frequency_epoch_indices(labels, sampler.total_size, 0.5,
                                             make_rng(5 + 4))
        mine = list(sampler)
        assert mine == stream[rank::world].tolist()
        with mock.patch('mmengine.dataset.sampler.get_dist_info',
                        return_value=(rank, world)):
            default = DefaultSampler(ds, seed=0, round_up=round_up)
        assert len(sampler) == len(default) == len(mine)
        assert len(DataLoader(ds, 7, sampler=sampler)) == len(
            DataLoader(ds, 7, sampler=default))


def test_set_epoch_seed_and_determinism():
    labels = make_labels()
    a, b, c = make(labels, seed=1), make(labels, seed=1), make(labels, seed=2)
    first = list(a)
    assert list(b) == first and list(a) == first
    assert list(c) != first
    a.set_epoch(1)
    assert list(a) != first
    d = make(labels, seed=1, shuffle=False)
    epoch0 = list(d)
    d.set_epoch(3)
    assert list(d) == epoch0


@pytest.mark.parametrize(
    'power', [float('nan'), float('inf'), '0.5', True, None])
def test_invalid_power(power):
    with pytest.raises(ValueError, match=r'ClassFrequencySampler power must '
                       r'be a finite number but is '):
        make(make_labels(), power=power)


def test_dataset_errors():

    class NoLabels:

        def __len__(self):
            return 3

    with pytest.raises(ValueError, match='exposes no class labels'):
        ClassFrequencySampler(NoLabels(), seed=0)
    with pytest.raises(ValueError, match='the dataset is empty'):
        make(np.zeros(0, dtype=np.int64))


def test_runner_build_dataloader():
    init_default_scope('mmpretrain')
    labels = make_labels()
    loader = Runner.build_dataloader(dict(
        batch_size=16,
        sampler=dict(type='ClassFrequencySampler', power=0.0),
        collate_fn=dict(type='default_collate'),
        dataset=FakeDataset(labels)),
                                     seed=3)
    assert isinstance(loader.sampler, ClassFrequencySampler)
    batches = [b.numpy() for b in loader]
    assert sum(len(b) for b in batches) == len(labels)
