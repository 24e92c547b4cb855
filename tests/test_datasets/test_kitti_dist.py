"""KITTIDist on a fake KITTI ``training/label_2`` layout."""
import os.path as osp

import pytest
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets import (KITTIDist, kitti_dist_label,
                              kitti_train_test_split)
from tests._downstream_layouts import kitti_line, write_kitti

# (objects of the image, expected class) under VISSL's rule: d = min z over
# Car/Van/Truck (-inf if none); class 0 'no_vehicle' (d <= 0), 1 'below_8'
# (0 < d <= 8), 2 'below_20' (8 < d <= 20), 3 'above_20' (d > 20).
CASES = {
    '000000': ([], 0),
    '000001': ([('Pedestrian', 5.0), ('Cyclist', 3.0)], 0),
    '000002': ([('Car', 5.0)], 1),
    '000003': ([('Car', 8.0)], 1),  # on the threshold: lower bin
    '000004': ([('Car', 8.01)], 2),
    '000005': ([('Van', 20.0)], 2),
    '000006': ([('Truck', 20.5)], 3),
    '000007': ([('Car', 30.0), ('Van', 6.0), ('Pedestrian', 1.0)], 1),
    '000008': ([('DontCare', -1000.0)], 0),
    '000009': ([('Car', 0.0)], 0),  # VISSL: d = 0 falls in bin 0 too
}


@pytest.fixture
def kitti_root(tmp_path):
    return write_kitti(str(tmp_path),
                       {k: objects for k, (objects, _) in CASES.items()})


def test_label_rule_with_boundaries():
    for image_id, (objects, expected) in CASES.items():
        lines = [kitti_line(t, z) for t, z in objects]
        assert kitti_dist_label(lines) == expected, image_id


def test_dataset_labels_and_seeded_80_20_split(kitti_root):
    train = KITTIDist(data_root=kitti_root, split='train', seed=0)
    test = DATASETS.build(
        dict(type='KITTIDist', data_root=kitti_root, split='test', seed=0))
    assert (len(train), len(test)) == (8, 2)
    ids = {}
    for ds in (train, test):
        for i in range(len(ds)):
            info = ds.get_data_info(i)
            image_id = osp.splitext(osp.basename(info['img_path']))[0]
            assert info['img_path'] == osp.join(kitti_root, 'training',
                                                'image_2', f'{image_id}.png')
            assert info['gt_label'] == CASES[image_id][1], image_id
            ids.setdefault(image_id, 0)
            ids[image_id] += 1
    # disjoint and complete
    assert sorted(ids) == sorted(CASES) and set(ids.values()) == {1}
    assert train.metainfo['classes'] == ('no_vehicle', 'below_8', 'below_20',
                                         'above_20')
    assert test.test_mode and not train.test_mode


def test_split_is_reproducible_and_seeded(kitti_root):
    ids = [f'{i:06d}' for i in range(50)]
    first = kitti_train_test_split(ids, 0.8, seed=7)
    # order of the input ids does not matter
    assert kitti_train_test_split(list(reversed(ids)), 0.8, seed=7) == first
    assert kitti_train_test_split(ids, 0.8, seed=8) != first
    assert len(first['train']) == 40 and len(first['test']) == 10

    def train_paths(seed):
        ds = KITTIDist(data_root=kitti_root, seed=seed)
        return [ds.get_data_info(i)['img_path'] for i in range(len(ds))]

    assert train_paths(1) == train_paths(1) != train_paths(2)


def test_missing_label_folder_names_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r'training/label_2'):
        KITTIDist(data_root=str(tmp_path))


def test_short_label_line_names_file_and_fields(tmp_path):
    root = write_kitti(str(tmp_path), {'000000': []})
    path = osp.join(root, 'training', 'label_2', '000000.txt')
    with open(path, 'w') as f:
        f.write('Car 0.00 0 -1.57 100.0 150.0 200.0 250.0 1.5 1.6 3.9 1.0\n')
    with pytest.raises(ValueError, match=r'000000\.txt, line 1: expected 15'):
        KITTIDist(data_root=root)


def test_non_numeric_depth_names_field():
    with pytest.raises(ValueError, match=r'field 13 \(location z\)'):
        kitti_dist_label([kitti_line('Car', 'far')], source='x.txt')


def test_bad_arguments_are_rejected(tmp_path):
    with pytest.raises(ValueError, match='split must be one of'):
        KITTIDist(data_root=str(tmp_path), split='val')
    with pytest.raises(ValueError, match='train_fraction'):
        KITTIDist(data_root=str(tmp_path), train_fraction=1.0)


def test_original_layout_split_check_names_the_choices(tmp_path):
    from pmsn_mm.datasets import KITTIDist
    with pytest.raises(ValueError, match=r"^split must be one of \('train', "
                       r"'test'\) but is 'val'\.$"):
        KITTIDist(data_root=str(tmp_path), split='val')
