import os
import tempfile
from unittest import mock

import numpy as np
import pytest
import torch.distributed as dist
import torch.multiprocessing as mp
from mmengine.dataset import ConcatDataset, DefaultSampler, RepeatDataset
from mmengine.registry import DATA_SAMPLERS, init_default_scope
from mmengine.runner import Runner
from mmpretrain.datasets import BaseDataset
from torch.utils.data import ConcatDataset as TorchConcatDataset
from torch.utils.data import DataLoader, Subset

from pmsn_mm.datasets.samplers import (ClassStratifiedBatchSampler,
                                       get_dataset_labels,
                                       stratified_epoch_indices)
from tests._dist import free_port, gloo_group

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

DIST_INFO = ('pmsn_mm.datasets.samplers.class_stratified_sampler.'
             'get_dist_info')
DEFAULT_DIST_INFO = 'mmengine.dataset.sampler.get_dist_info'


class FakeDataset:
    """mmpretrain-like: labels from ``get_gt_labels()``; items are indices."""

    def __init__(self, labels):
        self.labels = np.asarray(labels)
        self.metainfo = dict(classes=None)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return int(idx)

    def full_init(self):
        pass

    def get_gt_labels(self):
        return self.labels


class CatIdsDataset:
    """mmengine-like: only ``get_cat_ids(idx)``."""

    def __init__(self, labels):
        self.labels = list(labels)

    def __len__(self):
        return len(self.labels)

    def get_cat_ids(self, idx):
        return [self.labels[idx]]


class TinyMMPretrain(BaseDataset):
    """A real mmpretrain dataset with in-memory annotations (no files)."""

    def __init__(self, labels):
        self._labels = [int(x) for x in labels]
        super().__init__(ann_file='', metainfo=dict(classes=['a'] * 100))

    def load_data_list(self):
        return [
            dict(img_path=f'{i}.jpg', gt_label=label)
            for i, label in enumerate(self._labels)
        ]


def uneven_labels(seed=0, num_classes=12, low=16, high=40):
    rng = np.random.default_rng(seed)
    counts = rng.integers(low, high, num_classes)
    labels = np.repeat(np.arange(num_classes) * 3 + 5, counts)  # sparse ids
    rng.shuffle(labels)
    return labels


def build(dataset, world=1, rank=0, seed=7, shuffle=True, round_up=True,
          **kwargs):
    """A ClassStratifiedBatchSampler over a DefaultSampler of ``dataset``,
    as rank ``rank`` of ``world``."""
    with mock.patch(DIST_INFO, return_value=(rank, world)), \
            mock.patch(DEFAULT_DIST_INFO, return_value=(rank, world)):
        sampler = DefaultSampler(dataset,
                                 shuffle=shuffle,
                                 seed=seed,
                                 round_up=round_up)
        return ClassStratifiedBatchSampler(sampler, **kwargs)


def make(labels, world=1, rank=0, **kwargs):
    return build(FakeDataset(labels), world, rank, **kwargs)


def epoch_of(batch_sampler, epoch):
    """This rank's batches of ``epoch``, shape (T, batch_size)."""
    batch_sampler.sampler.set_epoch(epoch)  # as mmengine's loops do
    return np.asarray(list(batch_sampler))


def check_global_batches(batches, labels, k, replacement=False):
    batches = np.asarray(batches)
    per_class = batches.shape[1] // k
    for batch in batches:
        classes, counts = np.unique(labels[batch], return_counts=True)
        assert len(classes) == k
        assert np.all(counts == per_class)
        if not replacement:
            assert len(np.unique(batch)) == len(batch)


@pytest.mark.parametrize('k,batch_size', [(1, 16), (2, 16), (4, 16), (12, 12),
                                          (3, 48)])
def test_every_batch_has_k_classes_single_rank(k, batch_size):
    labels = uneven_labels()
    sampler = make(labels, classes_per_batch=k, batch_size=batch_size)
    for epoch in range(3):
        batches = epoch_of(sampler, epoch)
        assert batches.shape == (len(sampler), batch_size)
        check_global_batches(batches, labels, k)


@pytest.mark.parametrize('world,batch_size,k', [(2, 8, 4), (3, 8, 6),
                                                (4, 4, 2), (4, 6, 8)])
def test_ranks_split_each_global_batch(world, batch_size, k):
    labels = uneven_labels(1)
    per_rank = []
    for rank in range(world):
        sampler = make(labels,
                       world,
                       rank,
                       classes_per_batch=k,
                       batch_size=batch_size)
        per_rank.append(epoch_of(sampler, 3))
        assert per_rank[-1].shape == (len(sampler), batch_size)
    # Global batch t = concatenation of every rank's batch t.
    global_batches = np.concatenate(per_rank, axis=1)
    np.testing.assert_array_equal(global_batches, sampler.epoch_batches())
    check_global_batches(global_batches, labels, k)
    for t in range(global_batches.shape[0]):  # ranks never overlap
        sets = [set(r[t]) for r in per_rank]
        assert sum(len(s) for s in sets) == len(set().union(*sets))


def _gloo_worker(rank, world, port, out_dir, labels, k, batch_size):
    with gloo_group(rank, world, port):
        sampler = ClassStratifiedBatchSampler(
            DefaultSampler(FakeDataset(labels)),
            classes_per_batch=k,
            batch_size=batch_size)
        batches = epoch_of(sampler, 2)
        gathered = [None] * world
        dist.all_gather_object(gathered, (sampler.seed, batches.tolist()))
        if rank == 0:
            np.save(os.path.join(out_dir, 'seeds.npy'),
                    np.array([g[0] for g in gathered]))
            np.save(os.path.join(out_dir, 'indices.npy'),
                    np.array([g[1] for g in gathered]))


def test_two_real_gloo_processes():
    port = free_port()
    labels = uneven_labels(2)
    world, batch_size, k = 2, 12, 4
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(_gloo_worker,
                 nprocs=world,
                 args=(world, port, out_dir, labels, k, batch_size))
        seeds = np.load(os.path.join(out_dir, 'seeds.npy'))
        indices = np.load(os.path.join(out_dir, 'indices.npy'))
    assert seeds[0] == seeds[1]  # synced by sync_random_seed()
    per_rank = indices.reshape(world, -1, batch_size)
    global_batches = np.concatenate(list(per_rank), axis=1)
    assert global_batches.shape[0] == int(np.ceil(len(labels) / 24))
    check_global_batches(global_batches, labels, k)
    for t in range(global_batches.shape[0]):
        assert not set(per_rank[0, t]) & set(per_rank[1, t])
    # Same seed in one process gives the same batches.
    ref = make(labels,
               world,
               0,
               seed=int(seeds[0]),
               classes_per_batch=k,
               batch_size=batch_size)
    ref.sampler.set_epoch(2)
    np.testing.assert_array_equal(global_batches, ref.epoch_batches())


def appearance_rate(labels, k, batch, epochs, replacement=False, seed=0):
    sampler = make(labels,
                   seed=seed,
                   classes_per_batch=k,
                   batch_size=batch,
                   replacement=replacement)
    counts = np.zeros(len(labels))
    for epoch in range(epochs):
        np.add.at(counts, epoch_of(sampler, epoch).ravel(), 1)
    return counts / (epochs * sampler.num_batches)


def test_appendix_g_marginal_is_the_same_for_balanced_and_imbalanced():
    # 20 classes x 24 images, global batch 48: K=16 (3 per class) is the
    # "960-like" setting, K=2 (24 per class) the "2-like" one.
    num_classes, n, batch, epochs = 20, 24, 48, 600  # 6000 iterations
    labels = np.repeat(np.arange(num_classes), n)
    p = batch / (num_classes * n)  # (K / C) * (B / K) / n = 0.1
    iters = epochs * 10
    # Each image appears at most once per iteration; its per-iteration
    # indicator has variance <= p(1 - p), so a 5-sigma bound (independent
    # iterations) on each of the 480 rates fails by chance with prob < 3e-4.
    tol = 5 * np.sqrt(p * (1 - p) / iters)
    balanced = appearance_rate(labels, 16, batch, epochs)
    imbalanced = appearance_rate(labels, 2, batch, epochs)
    assert np.abs(balanced - p).max() < tol
    assert np.abs(imbalanced - p).max() < tol
    assert np.abs(balanced - imbalanced).max() < np.sqrt(2) * tol


@pytest.mark.parametrize('replacement', [False, True])
def test_marginal_with_unequal_class_sizes(replacement):
    # Expected appearances per iteration: (K / C) * (m / n_c).
    counts = np.array([8, 16, 16, 24, 32, 40])
    labels = np.repeat(np.arange(6), counts)
    k, batch, epochs = 3, 24, 800
    rate = appearance_rate(labels, k, batch, epochs, replacement, seed=3)
    expected = (k / 6) * (batch / k) / counts[labels]
    iters = epochs * int(np.ceil(len(labels) / batch))
    # Per-iteration count of one image: Bernoulli(expected) without
    # replacement; with it, Binomial(m, 1 / n_c) if its class is drawn.
    q, frac = k / 6, (batch / k) / counts[labels]
    if replacement:
        var = q * frac * (1 - 1 / counts[labels]) + q * (1 - q) * frac**2
    else:
        var = expected * (1 - expected)
    assert np.all(np.abs(rate - expected) < 5 * np.sqrt(var / iters))


def test_set_epoch_seed_and_determinism():
    labels = uneven_labels()
    a = make(labels, seed=1, classes_per_batch=4, batch_size=16)
    b = make(labels, seed=1, classes_per_batch=4, batch_size=16)
    c = make(labels, seed=2, classes_per_batch=4, batch_size=16)
    first = list(a)
    assert list(a) == first  # re-iterating the same epoch
    assert list(b) == first  # same seed + epoch (resume)
    assert list(c) != first  # different seed
    a.sampler.set_epoch(1)
    assert list(a) != first
    b.sampler.set_epoch(1)
    assert list(a) == list(b)
    # shuffle=False: every epoch repeats epoch 0.
    d = make(labels, seed=1, shuffle=False, classes_per_batch=4, batch_size=16)
    epoch0 = list(d)
    d.sampler.set_epoch(5)
    assert list(d) == epoch0


@pytest.mark.parametrize('n', [37, 48, 49, 200, 333])
@pytest.mark.parametrize('world,batch_size', [(1, 6), (2, 4), (3, 8), (4, 3)])
def test_iterations_match_default_sampler(n, world, batch_size):
    labels = np.arange(n) % 3
    k = 3 if (batch_size * world) % 3 == 0 else 1
    ds = FakeDataset(labels)
    for rank in range(world):
        with mock.patch(DEFAULT_DIST_INFO, return_value=(rank, world)):
            default = DefaultSampler(ds, seed=0)
        default_iters = len(DataLoader(ds, batch_size, sampler=default))
        sampler = make(labels,
                       world,
                       rank,
                       classes_per_batch=k,
                       batch_size=batch_size,
                       replacement=True)
        assert len(sampler) == default_iters
        assert len(list(sampler)) == len(sampler)
        assert all(len(b) == batch_size for b in sampler)  # all whole
        # round_up=False keeps only whole global batches.
        if n >= batch_size * world:
            short = make(labels,
                         world,
                         rank,
                         round_up=False,
                         classes_per_batch=k,
                         batch_size=batch_size,
                         replacement=True)
            assert len(short) == n // (batch_size * world)
            assert len(list(short)) == len(short)


def test_replacement_allows_small_classes():
    labels = np.repeat(np.arange(4), [2, 3, 20, 20])
    sampler = make(labels,
                   classes_per_batch=2,
                   batch_size=16,
                   replacement=True)
    check_global_batches(epoch_of(sampler, 0),
                         labels,
                         2,
                         replacement=True)


def test_errors_name_the_setting():
    labels = np.repeat(np.arange(4), [5, 8, 8, 8])
    with pytest.raises(ValueError, match='classes_per_batch=5 exceeds'):
        make(labels, classes_per_batch=5, batch_size=8)
    with pytest.raises(ValueError,
                       match=r'classes_per_batch=3 must divide the global '
                       r'batch size \(batch_size=4 × world_size=2'):
        make(labels, world=2, classes_per_batch=3, batch_size=4)
    with pytest.raises(ValueError,
                       match='class 0 has 5 images but each sampled class '
                       'needs 8 .*replacement=True'):
        make(labels, classes_per_batch=2, batch_size=16)
    with pytest.raises(ValueError,
                       match='ClassStratifiedBatchSampler classes_per_batch '
                       'must be an int >= 1 but is 0'):
        make(labels, classes_per_batch=0, batch_size=8)
    with pytest.raises(ValueError,
                       match='ClassStratifiedBatchSampler batch_size must be '
                       'an int >= 1 but is 2.0'):
        make(labels, classes_per_batch=1, batch_size=2.0)
    with pytest.raises(ValueError, match='round_up=True or lower batch_size'):
        make(labels,
             round_up=False,
             classes_per_batch=4,
             batch_size=32,
             replacement=True)


def test_errors_for_datasets_without_labels():

    class NoLabels:

        def __len__(self):
            return 4

    with pytest.raises(ValueError, match='exposes no class labels'):
        build(NoLabels(), classes_per_batch=1, batch_size=2)

    class BrokenGt(FakeDataset):

        def get_gt_labels(self):
            raise KeyError('gt_label')

    with pytest.raises(ValueError, match=r'get_gt_labels\(\) failed'):
        build(BrokenGt([0, 1]), classes_per_batch=1, batch_size=2)
    with pytest.raises(ValueError, match='multi-label'):
        get_dataset_labels(FakeDataset([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match='gave 3 labels but the dataset has'):

        class Short(FakeDataset):

            def __len__(self):
                return 4

        get_dataset_labels(Short([0, 1, 2]))

    class MultiCat(CatIdsDataset):

        def get_cat_ids(self, idx):
            return [0, 1]

    with pytest.raises(ValueError, match='exactly one class label'):
        get_dataset_labels(MultiCat([0, 1]))


def test_label_sources_and_wrappers():
    labels = np.array([3, 1, 1, 2])
    real = TinyMMPretrain(labels)
    np.testing.assert_array_equal(get_dataset_labels(real), labels)
    np.testing.assert_array_equal(get_dataset_labels(CatIdsDataset(labels)),
                                  labels)
    np.testing.assert_array_equal(get_dataset_labels(RepeatDataset(real, 3)),
                                  np.tile(labels, 3))
    np.testing.assert_array_equal(
        get_dataset_labels(ConcatDataset([real, TinyMMPretrain([0, 9])])),
        [3, 1, 1, 2, 0, 9])
    np.testing.assert_array_equal(
        get_dataset_labels(
            TorchConcatDataset([FakeDataset(labels),
                                CatIdsDataset([7])])), [3, 1, 1, 2, 7])
    np.testing.assert_array_equal(
        get_dataset_labels(Subset(FakeDataset(labels), [2, 0])), [1, 3])
    # The sampler uses the wrapper's indices.
    sampler = build(RepeatDataset(TinyMMPretrain(uneven_labels(6)), 2),
                    seed=0,
                    classes_per_batch=8,
                    batch_size=16)
    check_global_batches(epoch_of(sampler, 0), np.tile(uneven_labels(6), 2),
                         8)


def test_core_function_is_pure_and_validates():
    labels = np.repeat(np.arange(5), 10)
    out1 = stratified_epoch_indices(labels, 7, 10, 5, np.random.default_rng(0))
    out2 = stratified_epoch_indices(labels, 7, 10, 5, np.random.default_rng(0))
    assert out1.shape == (7, 10)
    np.testing.assert_array_equal(out1, out2)
    with pytest.raises(ValueError, match='k=3 must divide'):
        stratified_epoch_indices(labels, 1, 10, 3, np.random.default_rng(0))


def test_in_torch_dataloader():
    labels = uneven_labels(4)
    sampler = make(labels, classes_per_batch=2, batch_size=10)
    loader = DataLoader(FakeDataset(labels), batch_sampler=sampler)
    batches = [b.numpy() for b in loader]
    assert len(batches) == len(sampler)
    check_global_batches(batches, labels, 2)


def test_runner_build_dataloader_resolves_type_in_mmpretrain_scope():
    init_default_scope('mmpretrain')
    # mmengine's root registry resolves the name through mmpretrain's child.
    with DATA_SAMPLERS.switch_scope_and_registry(None) as registry:
        assert registry.scope == 'mmpretrain'
        assert registry.get('ClassStratifiedBatchSampler') is \
            ClassStratifiedBatchSampler
    labels = uneven_labels(5)
    loader = Runner.build_dataloader(dict(
        batch_size=8,
        num_workers=0,
        sampler=dict(type='DefaultSampler'),
        batch_sampler=dict(type='ClassStratifiedBatchSampler',
                           classes_per_batch=4),
        collate_fn=dict(type='default_collate'),
        dataset=FakeDataset(labels)),
                                     seed=11)
    assert isinstance(loader.batch_sampler, ClassStratifiedBatchSampler)
    assert loader.batch_sampler.seed == 11
    batches = [np.asarray(b) for b in loader]
    assert len(batches) == int(np.ceil(len(labels) / 8))
    check_global_batches(batches, labels, 4)
    # num_batch_per_epoch slices the dataset; labels follow the slice.
    loader = Runner.build_dataloader(dict(
        batch_size=8,
        num_batch_per_epoch=3,
        sampler=dict(type='DefaultSampler'),
        batch_sampler=dict(type='ClassStratifiedBatchSampler',
                           classes_per_batch=4,
                           replacement=True),
        collate_fn=dict(type='pseudo_collate'),
        dataset=FakeDataset(labels)),
                                     seed=11)
    batches = list(loader)
    assert len(batches) == 3
    assert max(max(b) for b in batches) < 24


def test_no_plain_sampler_form():
    """There is no ``ClassStratifiedSampler``: mmengine's registry names the
    unknown type (the batch sampler's docstring says how to configure it)."""
    init_default_scope('mmpretrain')
    with pytest.raises(KeyError, match='ClassStratifiedSampler is not in'):
        Runner.build_dataloader(
            dict(batch_size=8,
                 sampler=dict(type='ClassStratifiedSampler',
                              classes_per_batch=4),
                 dataset=FakeDataset(uneven_labels(5))),
            seed=11)


def test_real_mmpretrain_dataset():
    labels = uneven_labels(6)
    sampler = build(TinyMMPretrain(labels),
                    seed=0,
                    classes_per_batch=8,
                    batch_size=16)
    check_global_batches(epoch_of(sampler, 0), labels, 8)


# ------------------------------------------- as mmengine's batch_sampler
def test_batch_sampler_from_a_config_states_batch_size_once():
    """Runner.build_dataloader passes the dataloader's batch_size to the
    batch sampler; the batches are those of one built directly, epoch by
    epoch."""
    init_default_scope('mmpretrain')
    labels = uneven_labels(3)
    loader = Runner.build_dataloader(
        dict(batch_size=16,
             num_workers=0,
             dataset=FakeDataset(labels),
             sampler=dict(type='DefaultSampler', shuffle=True, seed=7),
             batch_sampler=dict(type='ClassStratifiedBatchSampler',
                                classes_per_batch=4),
             collate_fn=dict(type='default_collate')))
    batch_sampler = loader.batch_sampler
    assert type(batch_sampler).__name__ == 'ClassStratifiedBatchSampler'
    reference = make(labels, classes_per_batch=4, batch_size=16)
    epochs = []
    for epoch in (0, 1):
        batch_sampler.sampler.set_epoch(epoch)  # as mmengine's loops do
        reference.sampler.set_epoch(epoch)
        batches = [b.numpy() for b in loader]
        assert len(batches) == len(loader) == reference.num_batches
        np.testing.assert_array_equal(
            batches, np.reshape(list(reference), (-1, 16)))
        check_global_batches(batches, labels, 4)
        epochs.append(batches)
    assert not np.array_equal(epochs[0], epochs[1])


@pytest.mark.parametrize('world', [2, 3])
def test_batch_sampler_ranks_take_their_slice(world):
    labels = uneven_labels(4)
    per_rank = []
    for rank in range(world):
        with mock.patch(DIST_INFO, return_value=(rank, world)), \
                mock.patch('mmengine.dataset.sampler.get_dist_info',
                           return_value=(rank, world)):
            sampler = DefaultSampler(FakeDataset(labels), seed=5)
            batch_sampler = DATA_SAMPLERS.build(
                dict(type='ClassStratifiedBatchSampler',
                     classes_per_batch=2),
                default_args=dict(sampler=sampler, batch_size=6))
        sampler.set_epoch(2)
        per_rank.append(np.asarray(list(batch_sampler)))
        assert len(batch_sampler) == per_rank[-1].shape[0]
    check_global_batches(np.concatenate(per_rank, axis=1), labels, 2)


def test_batch_sampler_needs_a_sampler_with_a_dataset():
    with pytest.raises(ValueError, match='needs a sampler with a dataset'):
        DATA_SAMPLERS.build(
            dict(type='ClassStratifiedBatchSampler', classes_per_batch=2),
            default_args=dict(sampler=[0, 1, 2], batch_size=2))


def test_batch_sampler_in_the_iteration_based_loop():
    from mmengine.runner.loops import _InfiniteDataloaderIterator
    init_default_scope('mmpretrain')
    labels = uneven_labels(8)
    loader = Runner.build_dataloader(
        dict(batch_size=16, num_workers=0, dataset=FakeDataset(labels),
             sampler=dict(type='DefaultSampler', shuffle=True, seed=1),
             batch_sampler=dict(type='ClassStratifiedBatchSampler',
                                classes_per_batch=2),
             collate_fn=dict(type='default_collate')))
    per_epoch = len(loader)
    infinite = _InfiniteDataloaderIterator(loader)
    batches = [next(infinite).numpy() for _ in range(2 * per_epoch + 1)]
    # mmengine calls batch_sampler.sampler.set_epoch at every wrap-around
    assert loader.batch_sampler.sampler.epoch == 2
    check_global_batches(batches, labels, 2)
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(batches[:per_epoch], batches[per_epoch:]))
