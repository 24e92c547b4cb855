"""INat18 on fake ``train2018.json`` / ``val2018.json`` files."""
import json
import os.path as osp
import re
import time

import pytest
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets import INat18, inat18_samples
from tests._downstream_layouts import inat18_json, write_inat18

TRAIN = [  # (image_id, file_name, category_id); ids are not positions
    (17, 'train_val2018/Plantae/7477/a.jpg', 7477),
    (3, 'train_val2018/Aves/2000/b.jpg', 2000),
    (250, 'train_val2018/Plantae/7477/c.jpg', 7477),
    (4, 'train_val2018/Fungi/0/d.jpg', 0),
    (99, 'train_val2018/Insecta/8141/e.jpg', 8141),
]
VAL = [(1000, 'train_val2018/Aves/2000/v.jpg', 2000)]


@pytest.fixture
def inat_root(tmp_path):
    return write_inat18(str(tmp_path), inat18_json(TRAIN), inat18_json(VAL))


def test_labels_are_category_ids(inat_root):
    ds = INat18(data_root=inat_root, split='train')
    assert list(ds.get_gt_labels()) == [7477, 2000, 7477, 0, 8141]
    assert ds.get_data_info(1)['img_path'] == osp.join(
        inat_root, 'train_val2018/Aves/2000/b.jpg')
    assert len(ds.metainfo['classes']) == 8142
    assert not ds.test_mode


def test_val_and_test_alias_read_val2018(inat_root):
    for split in ('val', 'test'):
        ds = DATASETS.build(
            dict(type='INat18', data_root=inat_root, split=split))
        assert list(ds.get_gt_labels()) == [2000]
        assert ds.test_mode


def test_parsing_is_linear():
    n = 20000  # a nested loop over images x annotations would take minutes
    images = [(i, f'train_val2018/x/{i % 8142}/{i}.jpg', i % 8142)
              for i in range(n)]
    data = inat18_json(images)
    start = time.perf_counter()
    samples = inat18_samples(data)
    assert time.perf_counter() - start < 5.0
    assert samples[12345] == ('train_val2018/x/4203/12345.jpg', 4203)


def test_missing_file_names_path(inat_root):
    parent = osp.dirname(inat_root)  # holds inat18/, not the JSON files
    with pytest.raises(FileNotFoundError,
                       match=re.escape(osp.join(parent, 'train2018.json'))):
        INat18(data_root=parent)


def test_annotation_without_category_names_field(tmp_path):
    bad = inat18_json(TRAIN)
    del bad['annotations'][2]['category_id']
    root = write_inat18(str(tmp_path), bad, inat18_json(VAL))
    with pytest.raises(ValueError,
                       match=r"train2018.json: annotations\[2\].*"
                       r"'category_id'"):
        INat18(data_root=root)


def test_image_without_annotation_names_field(tmp_path):
    bad = inat18_json(VAL)
    bad['annotations'] = []
    root = write_inat18(str(tmp_path), inat18_json(TRAIN), bad)
    with pytest.raises(ValueError, match=r"images\[0\] \(id 1000\).*"
                       r"'annotations'"):
        INat18(data_root=root, split='val')


def test_missing_images_list_names_field(tmp_path):
    root = write_inat18(str(tmp_path), inat18_json(TRAIN), inat18_json(VAL))
    with open(osp.join(root, 'train2018.json'), 'w') as f:
        json.dump(dict(annotations=[]), f)
    with pytest.raises(ValueError, match="list field 'images'"):
        INat18(data_root=root)


def test_category_out_of_range_is_rejected():
    with pytest.raises(ValueError,
                       match=r"'category_id' must be in \[0, 8142\)"):
        inat18_samples(inat18_json([(0, 'a.jpg', 8142)]))


def test_unknown_split_is_rejected(inat_root):
    with pytest.raises(ValueError, match='split must be one of'):
        INat18(data_root=inat_root, split='train_val')
