"""ImageFolderDataset on a folder with or without class sub-folders: the
'auto' labels, the held-out split of one folder, and the errors for a
missing, empty or class-less folder. Real decodable images."""
import logging
import os
import os.path as osp

import numpy as np
import pytest
from mmengine.logging import MMLogger
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets.image_folder import holdout_mask
from tests._image_folders import write_class_tree, write_flat_folder

COUNTS = {'ant': 11, 'bee': 5, 'cat': 3}


def _tree(root, counts=COUNTS):
    return write_class_tree(root, counts)


def _flat(root, n=4):
    return write_flat_folder(root, n)


def _build(root, **kwargs):
    return DATASETS.build(dict(type='ImageFolderDataset', data_root=root,
                               **kwargs))


def _paths(dataset):
    return [dataset.get_data_info(i)['img_path']
            for i in range(len(dataset))]


@pytest.mark.parametrize('with_label', ['auto', True])
def test_class_folders_are_the_labels(tmp_path, with_label):
    root = _tree(tmp_path / 'tree')
    dataset = _build(root, with_label=with_label)
    assert dataset.metainfo['classes'] == ('ant', 'bee', 'cat')
    assert dataset.has_classes
    expected = {}
    for label, name in enumerate(sorted(COUNTS)):
        for folder, _, files in os.walk(osp.join(root, name)):
            expected.update((osp.join(folder, f), label) for f in files)
    got = dict(zip(map(osp.normpath, _paths(dataset)),
                   dataset.get_gt_labels().tolist()))
    assert got == {osp.normpath(k): v for k, v in expected.items()}


def test_flat_folder_is_unlabelled_with_auto(tmp_path):
    root = _flat(tmp_path / 'flat')
    dataset = _build(root, with_label='auto')
    assert len(dataset) == 4 and not dataset.has_classes
    assert dataset.metainfo['classes'] == ()
    assert sorted(map(osp.basename, _paths(dataset))) == [
        '0.png', '1.png', '2.png', '3.png']
    assert 'gt_label' not in dataset.get_data_info(0)
    for call in (dataset.get_gt_labels, lambda: dataset.get_cat_ids(0)):
        with pytest.raises(ValueError, match="is unlabelled \\(with_label="
                           "'auto' and no class sub-folder\\), so its images "
                           'have no class labels'):
            call()
    # and it loads: the pipeline sees a decodable image
    built = _build(root, with_label='auto',
                   pipeline=[dict(type='LoadImageFromFile')])
    assert built[0]['img'].shape == (12, 12, 3)


def test_unlabelled_reads_every_image_of_either_layout(tmp_path):
    root = _tree(tmp_path / 'tree')
    assert len(_build(root, with_label=False)) == sum(COUNTS.values())


def test_images_next_to_class_folders_are_skipped_with_a_warning(tmp_path):
    root = _tree(tmp_path / 'tree')
    _flat(root, n=2)
    logger = MMLogger.get_current_instance()
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        dataset = _build(root, with_label='auto')
    finally:
        logger.removeHandler(handler)
    assert len(dataset) == sum(COUNTS.values())
    assert any("2 image file(s) next to the class sub-folders belong to no "
               "class and are not read (e.g. '0.png')" in r.getMessage()
               for r in records)


@pytest.mark.parametrize('layout, kwargs, match', [
    ('flat', dict(with_label=True), r"4 image file\(s\) but no class "
     "sub-folder; with_label=True reads the classes from sub-folders.*"
     r"benchmarks need these labels\), or, for pretraining only, set "
     "with_label='auto' or False"),
    ('empty', dict(with_label='auto'), r'no image file \(extensions .bmp, '
     r'.jpeg, .jpg, .pgm, .png, .ppm, .tif\) in it or its sub-folders'),
    ('text_only', dict(with_label=False), 'no image file'),
    ('missing', dict(), 'the folder does not exist'),
    ('flat', dict(with_label='yes'), r"with_label must be one of \(True, "
     r"False, 'auto'\) but is 'yes'"),
    ('flat', dict(split='test'), r"split must be one of \(None, 'train', "
     r"'val'\) but is 'test'"),
    ('flat', dict(split='val', val_fraction=1.0),
     r'val_fraction must be in \(0, 1\) but is 1.0'),
])
def test_bad_folders_and_settings_raise(tmp_path, layout, kwargs, match):
    root = str(tmp_path / layout)
    if layout == 'flat':
        _flat(root)
    elif layout == 'empty':
        os.makedirs(osp.join(root, 'sub'))
    elif layout == 'text_only':
        os.makedirs(root)
        with open(osp.join(root, 'notes.txt'), 'w') as f:
            f.write('not an image\n')
    with pytest.raises(ValueError, match=match) as err:
        _build(root, **kwargs)
    if 'must be' not in match:  # the folder errors name the folder
        assert f"folder '{root}/'" in str(err.value)


def test_holdout_mask_spreads_floor_of_the_fraction():
    assert holdout_mask(10, 0.2).tolist() == [False] * 4 + [True] + \
        [False] * 4 + [True]
    for n in range(0, 40):
        for f in (0.1, 0.2, 0.25, 0.5):
            assert holdout_mask(n, f).sum() == int(np.floor(n * f + 1e-9))


def test_train_and_val_split_one_folder_per_class(tmp_path):
    root = _tree(tmp_path / 'tree')
    full = _build(root)
    train, val = _build(root, split='train'), _build(root, split='val')
    labels = dict(zip(_paths(full), full.get_gt_labels().tolist()))
    assert set(_paths(train)) | set(_paths(val)) == set(labels)
    assert not set(_paths(train)) & set(_paths(val))
    # floor(n / 5) of each class, its 5th, 10th, ... file in sorted order
    by_class = {}
    for path, label in labels.items():
        by_class.setdefault(label, []).append(path)
    expected_val = set()
    for members in by_class.values():
        expected_val.update(members[4::5])
    assert set(_paths(val)) == expected_val
    assert sorted(val.get_gt_labels().tolist()) == [0, 0, 1]  # 11, 5, 3
    assert len(train) == 19 - 3


def test_split_without_a_held_out_image_is_refused(tmp_path):
    root = _tree(tmp_path / 'tree', counts={'ant': 4, 'bee': 3})
    assert len(_build(root, split='train')) == 7
    with pytest.raises(ValueError, match="split='val' holds no image: with "
                       'val_fraction=0.2, a class needs at least 5 images '
                       r"to give one to 'val' \(the largest of the 2 has 4\)"):
        _build(root, split='val')
