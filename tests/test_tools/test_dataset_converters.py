"""tools/dataset_converters: main([...]) on fake original layouts."""
import importlib.util
import os.path as osp

import pytest
from mmpretrain.datasets import CustomDataset

from pmsn_mm.datasets import CLEVRDist, KITTIDist
from tests._configs import REPO
from tests._downstream_layouts import (clevr_scene, inat18_json, write_clevr,
                                       write_inat18, write_kitti)


def _load(name):
    spec = importlib.util.spec_from_file_location(
        f'dataset_converter_{name}',
        osp.join(REPO, 'tools', 'dataset_converters', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(path):
    with open(path) as f:
        return f.read().splitlines()


@pytest.mark.parametrize('name', ['convert_clevr', 'convert_kitti_dist',
                                  'convert_inat18'])
def test_help(name, capsys):
    with pytest.raises(SystemExit) as exc:
        _load(name).main(['--help'])
    assert exc.value.code == 0
    assert 'data_root' in capsys.readouterr().out


def test_convert_clevr_count_and_dist(tmp_path):
    root = write_clevr(
        str(tmp_path),
        train=[clevr_scene('CLEVR_train_000000.png', [9.0, 8.0, 12.0]),
               clevr_scene('CLEVR_train_000001.png', [10.2] * 5)],
        val=[clevr_scene('CLEVR_val_000000.png', [9.4] * 10)])
    tool = _load('convert_clevr')
    count_out, dist_out = str(tmp_path / 'count'), str(tmp_path / 'dist')
    tool.main([root, '--task', 'count', '--out', count_out])
    tool.main([root, '--task', 'dist', '--out', dist_out])
    assert _lines(osp.join(count_out, 'meta', 'train.txt')) == [
        'images/train/CLEVR_train_000000.png 0',  # 3 objects
        'images/train/CLEVR_train_000001.png 2',  # 5 objects
    ]
    assert _lines(osp.join(count_out, 'meta', 'test.txt')) == [
        'images/val/CLEVR_val_000000.png 7'  # 10 objects
    ]
    assert _lines(osp.join(dist_out, 'meta', 'train.txt')) == [
        'images/train/CLEVR_train_000000.png 0',  # min depth 8.0
        'images/train/CLEVR_train_000001.png 5',  # 10.2
    ]
    assert _lines(osp.join(dist_out, 'meta', 'test.txt')) == [
        'images/val/CLEVR_val_000000.png 3'  # 9.4
    ]
    assert len(_lines(osp.join(count_out, 'meta', 'classes.txt'))) == 8
    assert _lines(osp.join(dist_out, 'meta', 'classes.txt'))[0] == 'below_8.0'
    # the written list and the dataset class agree
    listed = CustomDataset(data_root=root,
                           ann_file=osp.join(dist_out, 'meta', 'train.txt'))
    direct = CLEVRDist(data_root=root, split='train')
    assert [listed.get_data_info(i)['img_path'] for i in range(2)] == \
        [direct.get_data_info(i)['img_path'] for i in range(2)]
    assert listed.get_gt_labels().tolist() == direct.get_gt_labels().tolist()


def test_convert_kitti_dist(tmp_path):
    objects = {
        '000000': [],
        '000001': [('Car', 8.0)],
        '000002': [('Van', 15.0), ('Pedestrian', 2.0)],
        '000003': [('Truck', 40.0)],
        '000004': [('Cyclist', 4.0)],
    }
    expected = {'000000': 0, '000001': 1, '000002': 2, '000003': 3,
                '000004': 0}
    root = write_kitti(str(tmp_path), objects)
    _load('convert_kitti_dist').main([root, '--seed', '3'])  # out = root
    train = _lines(osp.join(root, 'meta', 'train.txt'))
    test = _lines(osp.join(root, 'meta', 'test.txt'))
    assert (len(train), len(test)) == (4, 1)
    written = {}
    for line in train + test:
        path, label = line.split()
        image_id = osp.splitext(osp.basename(path))[0]
        assert path == f'training/image_2/{image_id}.png'
        written[image_id] = int(label)
    assert written == expected
    # same split as the dataset class with the same seed
    ds = KITTIDist(data_root=root, split='test', seed=3)
    assert test == [
        osp.relpath(ds.get_data_info(0)['img_path'], root) + ' ' +
        str(ds.get_data_info(0)['gt_label'])
    ]
    assert _lines(osp.join(root, 'meta', 'classes.txt')) == [
        'no_vehicle', 'below_8', 'below_20', 'above_20']


def test_convert_inat18(tmp_path):
    train = [(5, 'train_val2018/Aves/2000/a.jpg', 2000),
             (2, 'train_val2018/Fungi/3/b.jpg', 3)]
    val = [(9, 'train_val2018/Aves/2000/c.jpg', 2000)]
    root = write_inat18(str(tmp_path), inat18_json(train), inat18_json(val))
    out = str(tmp_path / 'lists')
    _load('convert_inat18').main([root, '--out', out])
    assert _lines(osp.join(out, 'meta', 'train.txt')) == [
        'train_val2018/Aves/2000/a.jpg 2000',
        'train_val2018/Fungi/3/b.jpg 3',
    ]
    assert _lines(osp.join(out, 'meta', 'val.txt')) == [
        'train_val2018/Aves/2000/c.jpg 2000'
    ]
    assert len(_lines(osp.join(out, 'meta', 'classes.txt'))) == 8142


def test_converter_reports_missing_input(tmp_path):
    with pytest.raises(FileNotFoundError, match='CLEVR_train_scenes.json'):
        _load('convert_clevr').main([str(tmp_path), '--task', 'count'])
