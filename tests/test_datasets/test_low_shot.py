"""Low-shot subsets: balanced, seeded, train-only, official list honoured."""
import os.path as osp
from collections import Counter

import numpy as np
import pytest
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets import (LowShotDataset, list_subset_indices,
                              per_class_subset_indices)
from pmsn_mm.datasets.samplers import get_dataset_labels

NUM_CLASSES = 4
PER_CLASS = 20


def _wnid(c):
    return f'n0{c:07d}'


def _write_list(path, split):
    """ImageNet-like ``<wnid>/<wnid>_<i>.JPEG <label>`` annotation list."""
    offset = 0 if split == 'train' else 1000  # test images have other ids
    with open(path, 'w') as f:
        for i in range(PER_CLASS):
            for c in range(NUM_CLASSES):
                f.write(f'{_wnid(c)}/{_wnid(c)}_{offset + i}.JPEG {c}\n')
    return str(path)


@pytest.fixture
def imagenet_like(tmp_path):
    return dict(
        type='CustomDataset',
        data_root=str(tmp_path),
        data_prefix='train',
        ann_file=_write_list(tmp_path / 'train.txt', 'train'))


def test_images_per_class_is_exact_and_seeded():
    labels = np.repeat(np.arange(5), [7, 9, 3, 12, 5])
    idx = per_class_subset_indices(labels, images_per_class=3, seed=0)
    assert Counter(labels[idx].tolist()) == {c: 3 for c in range(5)}
    assert len(set(idx.tolist())) == len(idx)
    assert np.array_equal(
        idx, per_class_subset_indices(labels, images_per_class=3, seed=0))
    assert not np.array_equal(
        idx, per_class_subset_indices(labels, images_per_class=3, seed=1))


def test_fraction_keeps_the_same_share_of_every_class():
    labels = np.repeat(np.arange(100), 500)  # CIFAR100 train: 500 per class
    idx = per_class_subset_indices(labels, fraction=0.01, seed=0)
    assert Counter(labels[idx].tolist()) == {c: 5 for c in range(100)}
    # a class of 30 images keeps round(0.1 * 30) = 3, and at least 1 of 4
    labels = np.repeat([0, 1], [30, 4])
    idx = per_class_subset_indices(labels, fraction=0.1, seed=0)
    assert Counter(labels[idx].tolist()) == {0: 3, 1: 1}


def test_dataset_wrapper_is_balanced_and_train_only(imagenet_like, tmp_path):
    ds = DATASETS.build(
        dict(type='LowShotDataset', dataset=imagenet_like,
             images_per_class=2, seed=3))
    assert isinstance(ds, LowShotDataset) and len(ds) == 2 * NUM_CLASSES
    assert Counter(ds.get_gt_labels().tolist()) == {
        c: 2 for c in range(NUM_CLASSES)}
    assert get_dataset_labels(ds).tolist() == ds.get_gt_labels().tolist()
    assert ds.get_cat_ids(0) == [int(ds.get_gt_labels()[0])]
    paths = {ds.get_data_info(i)['img_path'] for i in range(len(ds))}
    assert all(osp.dirname(p).startswith(osp.join(str(tmp_path), 'train'))
               for p in paths)
    test = DATASETS.build(
        dict(imagenet_like, data_prefix='val',
             ann_file=_write_list(tmp_path / 'val.txt', 'val')))
    test_names = {osp.basename(test.get_data_info(i)['img_path'])
                  for i in range(len(test))}
    assert not {osp.basename(p) for p in paths} & test_names
    # __getitem__ delegates to the wrapped dataset through the indices
    assert ds[1]['img_path'] == ds.get_data_info(1)['img_path']
    assert ds.metainfo == ds.dataset.metainfo


def test_official_list_file_is_honoured(imagenet_like, tmp_path):
    listed = ['n00000002_7.JPEG', 'n00000000_0.JPEG', 'n00000003_19.JPEG']
    list_file = tmp_path / '1percent.txt'
    list_file.write_text('\n'.join(listed) + '\n\n')
    ds = LowShotDataset(dataset=imagenet_like, list_file=str(list_file))
    names = [osp.basename(ds.get_data_info(i)['img_path'])
             for i in range(len(ds))]
    assert sorted(names) == sorted(listed)
    label_of = {osp.basename(ds.get_data_info(i)['img_path']):
                int(ds.get_gt_labels()[i]) for i in range(len(ds))}
    assert label_of == {'n00000002_7.JPEG': 2, 'n00000000_0.JPEG': 0,
                        'n00000003_19.JPEG': 3}


def test_list_naming_unknown_image_is_rejected():
    with pytest.raises(ValueError, match=r"1 of the 2 images listed in "
                       r"1percent.txt.*'n9_9.JPEG'"):
        list_subset_indices(['a/n1_1.JPEG', 'a/n1_2.JPEG'],
                            ['n1_1.JPEG', 'n9_9.JPEG'], '1percent.txt')


def test_missing_list_file_names_path(imagenet_like, tmp_path):
    missing = str(tmp_path / 'nope' / '1percent.txt')
    with pytest.raises(FileNotFoundError, match='nope/1percent.txt'):
        LowShotDataset(dataset=imagenet_like, list_file=missing)


def test_exactly_one_selection_rule():
    with pytest.raises(ValueError, match='exactly one of fraction'):
        LowShotDataset(dataset=None, fraction=0.1, images_per_class=2)
    with pytest.raises(ValueError, match='exactly one of fraction'):
        LowShotDataset(dataset=None)


def test_invalid_counts_are_rejected():
    labels = np.repeat([0, 1], [5, 2])
    with pytest.raises(ValueError, match='class 1 has only 2 images'):
        per_class_subset_indices(labels, images_per_class=3)
    with pytest.raises(ValueError, match=r'fraction must be in \(0, 1\]'):
        per_class_subset_indices(labels, fraction=0.0)
    with pytest.raises(ValueError,
                       match='images_per_class must be an int >= 1'):
        per_class_subset_indices(labels, images_per_class=0)
