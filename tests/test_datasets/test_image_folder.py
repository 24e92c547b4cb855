"""Class-folder trees: an empty class folder is refused at build time.

mmpretrain's ``CustomDataset`` only logs ``Found no valid file in the folder
...`` and keeps the class; ``ClassPrior`` then failed much later with
``entries [2] are 0``. The trees here hold real, decodable images.
"""
import os
import os.path as osp

import numpy as np
import pytest
from mmpretrain.datasets.categories import PLACES205_CATEGORIES
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets import ImageFolderDataset, Places205Sorted
from pmsn_mm.datasets.sample_data import class_image, write_image
from pmsn_mm.models.priors import ClassPrior

EXTENSIONS = '.bmp, .jpeg, .jpg, .pgm, .png, .ppm, .tif'
OPT_IN = ('or set allow_empty_classes=True (allowed values: True, False; '
          'default False) to keep them as classes without samples.')


def _write_tree(root, counts, size=12):
    """``root/<class>/img_<i>.{jpg,png}`` with ``counts[class]`` images
    (every second one in a nested folder); an empty class gets a text file
    only, which is not an image."""
    rng = np.random.default_rng(0)
    names = sorted(counts)
    for label, name in enumerate(names):
        os.makedirs(osp.join(root, name))
        for i in range(counts[name]):
            rel = f'img_{i}.jpg' if i % 2 == 0 else f'sub/img_{i}.png'
            write_image(osp.join(root, name, rel),
                        class_image(label, len(names), size, size, rng),
                        'rgb_jpeg' if rel.endswith('.jpg') else 'rgb_png')
        if counts[name] == 0:
            with open(osp.join(root, name, 'notes.txt'), 'w') as f:
                f.write('no images here\n')
    return root


def _expected(root, extensions=('.jpg', '.png')):
    """Classes (sorted folder names) and ``{image path: label}``, by
    walking the tree."""
    classes = sorted(d for d in os.listdir(root)
                     if osp.isdir(osp.join(root, d)))
    labels = {}
    for label, name in enumerate(classes):
        for folder, _, files in os.walk(osp.join(root, name)):
            for file in files:
                if file.lower().endswith(extensions):
                    labels[osp.join(folder, file)] = label
    return classes, labels


def _folder_cfg(root, **kwargs):
    return dict(type='ImageFolderDataset', data_root=root,
                data_prefix='train', **kwargs)


def test_empty_class_folders_are_refused_naming_each(tmp_path):
    root = str(tmp_path)
    _write_tree(osp.join(root, 'train'),
                {'a': 2, 'b': 0, 'c': 3, 'd': 0})
    with pytest.raises(ValueError) as info:
        DATASETS.build(_folder_cfg(root))
    assert str(info.value) == (
        f"ImageFolderDataset (data_root='{root}'): 2 class folder(s) hold "
        f'no image file (extensions {EXTENSIONS}): '
        f"'{osp.join(root, 'train', 'b')}', "
        f"'{osp.join(root, 'train', 'd')}'. Every sub-folder of data_prefix "
        'is a class; add images to them or remove them (or change '
        f'extensions), {OPT_IN}')


def test_allow_empty_classes_keeps_the_classes(tmp_path):
    root = str(tmp_path)
    _write_tree(osp.join(root, 'train'), {'a': 2, 'b': 0, 'c': 3})
    dataset = DATASETS.build(_folder_cfg(root, allow_empty_classes=True))
    classes, labels = _expected(osp.join(root, 'train'))
    assert classes == ['a', 'b', 'c']
    assert list(dataset.metainfo['classes']) == classes
    got = {dataset.get_data_info(i)['img_path']: dataset.get_gt_labels()[i]
           for i in range(len(dataset))}
    assert got == labels
    assert sorted(set(labels.values())) == [0, 2]


def test_class_folder_tree_builds_and_loads(tmp_path):
    root = str(tmp_path)
    _write_tree(osp.join(root, 'train'), {'cat': 3, 'dog': 1, 'eel': 2})
    dataset = ImageFolderDataset(
        data_root=root, data_prefix='train',
        pipeline=[dict(type='LoadImageFromFile'),
                  dict(type='PackInputs')])
    classes, labels = _expected(osp.join(root, 'train'))
    assert list(dataset.metainfo['classes']) == classes
    assert len(dataset) == len(labels) == 6
    for i in range(len(dataset)):
        info = dataset.get_data_info(i)
        assert labels[info['img_path']] == info['gt_label']
        sample = dataset[i]
        assert tuple(sample['inputs'].shape) == (3, 12, 12)
        assert sample['data_samples'].gt_label.item() == info['gt_label']


def test_class_prior_without_opt_in_gets_the_dataset_error_first(tmp_path):
    root = str(tmp_path)
    _write_tree(osp.join(root, 'train'), {'a': 2, 'b': 1, 'c': 0})
    with pytest.raises(ValueError) as info:
        ClassPrior(3, dataset=_folder_cfg(root))
    assert str(info.value).startswith(
        f"ImageFolderDataset (data_root='{root}'): 1 class folder(s) hold "
        'no image file')
    assert f"'{osp.join(root, 'train', 'c')}'" in str(info.value)
    assert 'allow_empty_classes=True' in str(info.value)


def test_class_prior_with_opt_in_gets_its_zero_entry_error(tmp_path):
    root = str(tmp_path)
    _write_tree(osp.join(root, 'train'), {'a': 2, 'b': 1, 'c': 0})
    with pytest.raises(ValueError,
                       match=r'ClassPrior dataset class counts must be > 0 '
                       r'for every prototype, but entries \[2\] are 0'):
        ClassPrior(3, dataset=_folder_cfg(root, allow_empty_classes=True))


def _write_list(root, counts):
    """Images of ``counts`` classes under ``root/images`` and
    ``root/ann.txt`` listing them (``<path> <label>``)."""
    images = _write_tree(osp.join(root, 'images'), counts)
    _, labels = _expected(images)
    with open(osp.join(root, 'ann.txt'), 'w') as f:
        f.writelines(f'{osp.relpath(path, images)} {label}\n'
                     for path, label in sorted(labels.items()))


def test_ann_file_class_without_sample_is_refused_naming_it(tmp_path):
    root = str(tmp_path)
    _write_list(root, {'a': 2, 'c': 1})  # labels 0 and 1
    cfg = dict(type='ImageFolderDataset', data_root=root,
               data_prefix='images', ann_file='ann.txt',
               classes=('a', 'c', 'z'))
    with pytest.raises(ValueError) as info:
        DATASETS.build(cfg)
    assert str(info.value) == (
        f"ImageFolderDataset (data_root='{root}', ann_file="
        f"'{osp.join(root, 'ann.txt')}'): 1 of the 3 classes have no sample "
        "in ann_file: 2 ('z'). Add samples for them or remove them from "
        f'classes (the labels index classes), {OPT_IN}')
    dataset = DATASETS.build(dict(cfg, allow_empty_classes=True))
    assert dataset.get_gt_labels().tolist() == [0, 0, 1]
    cfg['classes'] = ('a', 'c')
    assert len(DATASETS.build(cfg)) == 3


def test_allow_empty_classes_must_be_a_bool(tmp_path):
    root = str(tmp_path)
    _write_tree(osp.join(root, 'train'), {'a': 1})
    with pytest.raises(ValueError, match=r'allow_empty_classes must be one '
                       r"of \(True, False\) but is 'yes'\."):
        DATASETS.build(_folder_cfg(root, allow_empty_classes='yes'))


def test_places205_folder_tree_with_empty_class_folder_is_refused(tmp_path):
    # the folder-tree mode needs all 205 class folders; one is empty
    folders = sorted(name.replace('/', '-') for name in PLACES205_CATEGORIES)
    rng = np.random.default_rng(0)
    for i, name in enumerate(folders):
        os.makedirs(tmp_path / 'train' / name)
        if name != 'bakery-shop':
            write_image(str(tmp_path / 'train' / name / 'x.jpg'),
                        class_image(i, len(folders), 8, 8, rng))
    with pytest.raises(ValueError) as info:
        Places205Sorted(data_root=str(tmp_path), data_prefix='train')
    assert str(info.value).startswith(
        f"Places205Sorted (data_root='{tmp_path}'): 1 class folder(s) hold "
        'no image file')
    assert f"'{tmp_path / 'train' / 'bakery-shop'}'" in str(info.value)
    dataset = Places205Sorted(data_root=str(tmp_path), data_prefix='train',
                              allow_empty_classes=True)
    assert list(dataset.metainfo['classes']) == folders
    assert len(dataset) == 204
    assert folders.index('bakery-shop') not in dataset.get_gt_labels()
