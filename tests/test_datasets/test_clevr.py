"""CLEVRCount / CLEVRDist on a fake CLEVR_v1.0 scene layout."""
import json
import os.path as osp

import pytest
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets import (CLEVRCount, CLEVRDist, clevr_count_label,
                              clevr_dist_label)
from tests._downstream_layouts import clevr_scene, write_clevr

# (closest depth, expected class) under the rule
# "class i <=> thresholds[i-1] < d <= thresholds[i]",
# thresholds (8.0, 8.5, 9.0, 9.5, 10.0, 100.0); values on a threshold belong
# to the lower bin (VISSL's bisect_left).
DIST_CASES = [
    (3.0, 0), (8.0, 0), (8.01, 1), (8.5, 1), (8.9, 2), (9.0, 2), (9.2, 3),
    (9.5, 3), (9.99, 4), (10.0, 4), (10.01, 5), (55.0, 5), (100.0, 5)
]
# (number of objects, expected class): 3 -> 0, ..., 10 -> 7
COUNT_CASES = [(3, 0), (4, 1), (5, 2), (6, 3), (7, 4), (8, 5), (9, 6),
               (10, 7)]


def _train_scenes():
    scenes = []
    for i, (depth, _) in enumerate(DIST_CASES):
        # the closest object is not the first one: min over objects matters
        scenes.append(
            clevr_scene(f'CLEVR_train_{i:06d}.png', [depth + 3.0, depth,
                                                     depth + 1.0]))
    return scenes


def _count_scenes(prefix):
    return [
        clevr_scene(f'CLEVR_{prefix}_{i:06d}.png', [12.0] * n)
        for i, (n, _) in enumerate(COUNT_CASES)
    ]


@pytest.fixture
def clevr_root(tmp_path):
    return write_clevr(
        str(tmp_path), train=_train_scenes() + _count_scenes('train_c'),
        val=_count_scenes('val'))


def test_dist_label_rule_with_boundaries():
    for depth, expected in DIST_CASES:
        scene = clevr_scene('x.png', [depth + 0.5, depth])
        assert clevr_dist_label(scene) == expected, depth


def test_count_label_rule():
    for n, expected in COUNT_CASES:
        assert clevr_count_label(clevr_scene('x.png', [9.0] * n)) == expected


def test_clevr_dist_dataset_labels_and_paths(clevr_root):
    ds = CLEVRDist(data_root=clevr_root, split='train')
    assert len(ds) == len(DIST_CASES) + len(COUNT_CASES)
    labels = list(ds.get_gt_labels())
    # depth-12 count scenes are all in the 10 < d <= 100 bin
    assert labels == [c for _, c in DIST_CASES] + [5] * len(COUNT_CASES)
    assert ds.get_data_info(0)['img_path'] == osp.join(
        clevr_root, 'images', 'train', 'CLEVR_train_000000.png')
    assert len(ds.metainfo['classes']) == 6
    assert not ds.test_mode


def test_clevr_count_dataset_test_split_reads_official_val(clevr_root):
    ds = DATASETS.build(
        dict(type='CLEVRCount', data_root=clevr_root, split='test'))
    assert isinstance(ds, CLEVRCount)
    assert list(ds.get_gt_labels()) == [c for _, c in COUNT_CASES]
    assert ds.get_data_info(2)['img_path'] == osp.join(
        clevr_root, 'images', 'val', 'CLEVR_val_000002.png')
    assert ds.metainfo['classes'][0] == 'count_3'
    assert len(ds.metainfo['classes']) == 8
    assert ds.test_mode


def test_missing_scene_file_names_path(tmp_path):
    with pytest.raises(FileNotFoundError,
                       match=r'scenes/CLEVR_train_scenes\.json'):
        CLEVRCount(data_root=str(tmp_path), split='train')


def test_scene_without_objects_names_field(tmp_path):
    root = write_clevr(str(tmp_path), [dict(image_filename='a.png')], [])
    with pytest.raises(ValueError, match="CLEVR_train_scenes.json.*'objects'"):
        CLEVRCount(data_root=root)


def test_object_without_pixel_coords_names_field(tmp_path):
    scene = dict(image_filename='a.png', objects=[dict(shape='cube')])
    root = write_clevr(str(tmp_path), [scene], [])
    with pytest.raises(ValueError, match="'pixel_coords'"):
        CLEVRDist(data_root=root)


def test_file_without_scenes_list_names_field(tmp_path):
    root = write_clevr(str(tmp_path), [], [])
    with open(osp.join(root, 'scenes', 'CLEVR_train_scenes.json'), 'w') as f:
        json.dump(dict(info={}), f)
    with pytest.raises(ValueError, match="list field 'scenes'"):
        CLEVRDist(data_root=root)


def test_scene_without_image_filename_names_field(tmp_path):
    root = write_clevr(str(tmp_path), [dict(objects=[])], [])
    with pytest.raises(ValueError, match="'image_filename'"):
        CLEVRCount(data_root=root)


def test_invalid_json_names_path(tmp_path):
    root = write_clevr(str(tmp_path), [], [])
    with open(osp.join(root, 'scenes', 'CLEVR_val_scenes.json'), 'w') as f:
        f.write('{"scenes": [')
    with pytest.raises(ValueError, match='CLEVR_val_scenes.json is not valid'):
        CLEVRCount(data_root=root, split='test')


def test_count_out_of_range_is_rejected():
    with pytest.raises(ValueError, match="2 'objects'"):
        clevr_count_label(clevr_scene('a.png', [9.0, 9.0]))


def test_depth_beyond_last_threshold_is_rejected():
    with pytest.raises(ValueError, match='above the last'):
        clevr_dist_label(clevr_scene('a.png', [100.5]))


def test_unknown_split_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="split must be one of"):
        CLEVRCount(data_root=str(tmp_path), split='val')
