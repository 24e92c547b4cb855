"""Places205Sorted / CIFAR100Sorted: label i is the i-th sorted class name."""
import os
import os.path as osp
import pickle

import numpy as np
import pytest
from mmpretrain.datasets.categories import (CIFAR100_CATEGORIES,
                                            PLACES205_CATEGORIES)
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets import CIFAR100Sorted, Places205Sorted


def test_mmpretrain_cifar100_order_is_already_sorted():
    # the fact CIFAR100Sorted relies on for the official files
    assert list(CIFAR100_CATEGORIES) == sorted(CIFAR100_CATEGORIES)
    assert len(set(CIFAR100_CATEGORIES)) == 100


def test_mmpretrain_places205_order_is_not_sorted():
    # why Places205Sorted exists: official class 13 is out of order
    assert PLACES205_CATEGORIES[12:14] == ('auditorium',
                                           'apartment_building/outdoor')
    assert list(PLACES205_CATEGORIES) != sorted(PLACES205_CATEGORIES)


# ------------------------------------------------------------------ CIFAR100
def _write_cifar100(root, names):
    folder = osp.join(root, 'cifar-100-python')
    os.makedirs(folder)
    rng = np.random.default_rng(0)
    for split, labels in (('train', [0, 1, 99, 42]), ('test', [5, 98])):
        with open(osp.join(folder, split), 'wb') as f:
            pickle.dump(
                dict(data=rng.integers(0, 255, (len(labels), 3072),
                                       dtype=np.uint8),
                     fine_labels=labels), f)
    with open(osp.join(folder, 'meta'), 'wb') as f:
        pickle.dump(dict(fine_label_names=list(names)), f)
    return root


def test_cifar100_official_sorted_meta_keeps_labels(tmp_path):
    root = _write_cifar100(str(tmp_path), CIFAR100_CATEGORIES)
    ds = DATASETS.build(dict(type='CIFAR100Sorted', data_root=root))
    assert ds.get_gt_labels().tolist() == [0, 1, 99, 42]
    assert ds.metainfo['classes'][42] == CIFAR100_CATEGORIES[42]
    test = CIFAR100Sorted(data_root=root, split='test')
    assert test.get_gt_labels().tolist() == [5, 98]


def test_cifar100_permuted_meta_is_renumbered(tmp_path):
    # a re-packed copy whose label j means reversed_names[j]
    reversed_names = list(reversed(sorted(CIFAR100_CATEGORIES)))
    root = _write_cifar100(str(tmp_path), reversed_names)
    ds = CIFAR100Sorted(data_root=root, split='train')
    assert ds.get_gt_labels().tolist() == [99, 98, 0, 57]
    for old, new in zip([0, 1, 99, 42], ds.get_gt_labels()):
        assert ds.metainfo['classes'][new] == reversed_names[old]


def test_cifar100_copies_are_read_without_the_official_checksums(tmp_path):
    """mmpretrain's CIFAR100 refuses any copy whose MD5 is not the
    release's (and suggests download=True); ours reads the same files."""
    from mmpretrain.datasets import CIFAR100
    root = _write_cifar100(str(tmp_path), CIFAR100_CATEGORIES)
    with pytest.raises(RuntimeError, match='download=True'):
        CIFAR100(data_root=root, split='train', download=False)
    assert len(CIFAR100Sorted(data_root=root, split='train')) == 4


def test_cifar100_missing_and_unreadable_files_are_named(tmp_path):
    root = _write_cifar100(str(tmp_path), CIFAR100_CATEGORIES)
    os.remove(osp.join(root, 'cifar-100-python', 'test'))
    with pytest.raises(FileNotFoundError,
                       match=r"files missing in .*cifar-100-python: "
                       r"\['test'\]"):
        CIFAR100Sorted(data_root=root, split='train')
    with open(osp.join(root, 'cifar-100-python', 'test'), 'wb') as f:
        f.write(b'not a pickle')
    with pytest.raises(ValueError, match='cifar-100-python do not read as '
                       'CIFAR python batches'):
        CIFAR100Sorted(data_root=root, split='test')


def test_cifar100_unknown_names_are_rejected(tmp_path):
    names = list(CIFAR100_CATEGORIES[:-1]) + ['zebra_crossing']
    root = _write_cifar100(str(tmp_path), names)
    with pytest.raises(ValueError, match="unexpected e.g. \\['zebra_crossing"):
        CIFAR100Sorted(data_root=root)


# ----------------------------------------------------------------- Places205
# (official list line, expected sorted label)
PLACES_LINES = [
    ('a/abbey/00000001.jpg 0', 0),
    ('a/apartment_building/outdoor/00000002.jpg 13', 5),
    ('a/auditorium/00000003.jpg 12', 13),
    ('y/yard/00000004.jpg 204', 204),
]


def _write_places(root, lines, split='train'):
    folder = osp.join(root, 'trainvalsplit_places205')
    os.makedirs(folder, exist_ok=True)
    with open(osp.join(folder, f'{split}_places205.csv'), 'w') as f:
        f.writelines(line + '\n' for line in lines)
    return root


def test_places205_official_list_is_renumbered(tmp_path):
    root = _write_places(str(tmp_path), [line for line, _ in PLACES_LINES])
    ds = Places205Sorted(data_root=root, split='train')
    assert ds.get_gt_labels().tolist() == [lab for _, lab in PLACES_LINES]
    classes = ds.metainfo['classes']
    assert classes[5] == 'apartment_building/outdoor'
    assert classes[13] == 'auditorium'
    assert ds.get_data_info(1)['img_path'] == osp.join(
        root, 'data/vision/torralba/deeplearning/images256',
        'a/apartment_building/outdoor/00000002.jpg')


def test_places205_test_split_reads_official_val_list(tmp_path):
    root = _write_places(str(tmp_path), ['a/alley/1.jpg 2'], split='val')
    ds = DATASETS.build(
        dict(type='Places205Sorted', data_root=root, split='test'))
    assert ds.get_gt_labels().tolist() == [2]  # 'alley' is 3rd in both
    assert ds.test_mode


def test_places205_path_without_class_uses_official_label(tmp_path):
    root = _write_places(str(tmp_path), ['img_13.jpg 13', 'img_12.jpg 12'])
    ds = Places205Sorted(data_root=root, split='train')
    assert ds.get_gt_labels().tolist() == [5, 13]


def test_places205_label_contradicting_path_is_rejected(tmp_path):
    root = _write_places(str(tmp_path), ['a/abbey/1.jpg 3'])
    with pytest.raises(ValueError, match="class folder 'abbey' but has "
                       "official label 3 \\('amphitheater'\\)"):
        Places205Sorted(data_root=root, split='train')


def test_places205_folder_tree_uses_sorted_folder_names(tmp_path):
    folders = [name.replace('/', '-') for name in PLACES205_CATEGORIES]
    for name in folders:
        os.makedirs(tmp_path / 'train' / name)
        (tmp_path / 'train' / name / 'x.jpg').write_bytes(b'')
    ds = Places205Sorted(data_root=str(tmp_path), data_prefix='train')
    classes = ds.metainfo['classes']
    assert list(classes) == sorted(folders)
    for i in range(len(ds)):
        info = ds.get_data_info(i)
        folder = osp.basename(osp.dirname(info['img_path']))
        assert classes[info['gt_label']] == folder


def test_places205_bad_split_is_rejected(tmp_path):
    with pytest.raises(ValueError, match='split must be None or one of'):
        Places205Sorted(data_root=str(tmp_path), split='trainval')
