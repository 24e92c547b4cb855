"""make_sample_data: every format in its own layout, read by its reader with
the labels it was written with (checked from the layout itself)."""
import hashlib
import json
import os
import os.path as osp
import pickle

import numpy as np
import pytest
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets.sample_data import (FORMATS, expected_rgb,
                                          make_sample_data)
from pmsn_mm.datasets.sample_data.layouts import (IMAGENET_WNIDS, INAT18_HEAD,
                                                  INAT18_NUM_CLASSES)

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


@pytest.fixture(scope='module')
def roots(tmp_path_factory):
    return make_sample_data(str(tmp_path_factory.mktemp('sample')))


def _build(cfg):
    init_default_scope('mmpretrain')
    return DATASETS.build(dict(cfg, pipeline=[]))


def test_every_format_is_written_where_the_configs_look(roots):
    assert set(roots) == set(FORMATS)
    for name, root in roots.items():
        assert osp.basename(root) == name and os.listdir(root)


def test_imagenet_labels_follow_the_wnid_folders(roots):
    root = roots['imagenet']
    dataset = _build(dict(type='ImageNet', data_root=root, split='train'))
    for i in range(len(dataset)):
        info = dataset.get_data_info(i)
        wnid = osp.basename(osp.dirname(info['img_path']))
        assert info['gt_label'] == IMAGENET_WNIDS.index(wnid)
    val = _build(dict(type='ImageNet', data_root=root, split='val'))
    assert sorted(set(val.get_gt_labels())) == list(range(10))


def test_inat18_labels_follow_the_category_folders(roots):
    dataset = _build(dict(type='INat18', data_root=roots['inat18'],
                          split='train'))
    labels = dataset.get_gt_labels()
    for i in range(0, len(dataset), 97):
        path = dataset.get_data_info(i)['img_path']
        folder = osp.basename(osp.dirname(path))
        assert labels[i] == int(folder)
    assert len(set(labels)) == INAT18_NUM_CLASSES  # every category
    counts = np.bincount(labels, minlength=INAT18_NUM_CLASSES)
    assert counts.max() > 10 and counts.min() == 1  # long-tailed
    # what docs/evaluation.md quotes for the kNN's cost: 8,176 + 12 images
    test = _build(dict(type='INat18', data_root=roots['inat18'],
                       split='test'))
    head = dict(INAT18_HEAD)
    assert len(dataset) == sum(head.values()) + INAT18_NUM_CLASSES - len(
        head) == 8176
    assert len(test) == 2 * len(head) == 12


def test_inat18_head_only_is_the_small_demo_set(tmp_path):
    """``--inat18-head-only``: the 6 larger classes alone, 40 training and
    12 val images (docs/evaluation.md's demo in seconds)."""
    root = make_sample_data(str(tmp_path), ['inat18'],
                            inat18_all_classes=False)['inat18']
    train = _build(dict(type='INat18', data_root=root, split='train'))
    test = _build(dict(type='INat18', data_root=root, split='test'))
    assert (len(train), len(test)) == (40, 12)
    assert sorted(set(train.get_gt_labels())) == sorted(dict(INAT18_HEAD))


def test_places205_labels_are_sorted_class_names(roots):
    dataset = _build(dict(type='Places205Sorted',
                          data_root=roots['places205'], split='train'))
    classes = dataset.metainfo['classes']
    for i in range(len(dataset)):
        path = dataset.get_data_info(i)['img_path']
        name = '/'.join(path.split('images256/')[1].split('/')[1:-1])
        assert classes[dataset.get_data_info(i)['gt_label']] == name


def test_clevr_and_kitti_cover_every_class(roots):
    for kind, classes in (('CLEVRCount', 8), ('CLEVRDist', 6)):
        dataset = _build(dict(type=kind, data_root=roots['clevr'],
                              split='train'))
        assert sorted(set(dataset.get_gt_labels())) == list(range(classes))
    kitti = _build(dict(type='KITTIDist', data_root=roots['kitti'],
                        split='train'))
    for i in range(len(kitti)):  # written as class id % 4
        image_id = int(osp.basename(kitti.get_data_info(i)['img_path'])[:6])
        assert kitti.get_data_info(i)['gt_label'] == image_id % 4


def test_cifar_and_mnist_files_have_the_official_structure(roots):
    with open(osp.join(roots['cifar10'], 'cifar-10-batches-py',
                       'data_batch_1'), 'rb') as f:
        batch = pickle.load(f, encoding='latin1')
    assert batch['data'].shape == (20, 3072) and batch['data'].dtype == \
        np.uint8 and sorted(set(batch['labels'])) == list(range(10))
    cifar100 = _build(dict(type='CIFAR100Sorted', data_root=roots['cifar100'],
                           split='train'))
    assert np.bincount(cifar100.get_gt_labels()).tolist() == [2] * 100
    with open(osp.join(roots['mnist'], 'train-images-idx3-ubyte'),
              'rb') as f:
        header = np.frombuffer(f.read(16), dtype='>i4')
    assert header.tolist() == [2051, 100, 28, 28]
    init_default_scope('mmpretrain')
    mnist = DATASETS.build(dict(type='MNIST', data_root=roots['mnist'],
                                split='train', download=False))
    assert len(mnist) == 100


def test_same_seed_same_bytes(tmp_path):
    def digest(root):
        out = hashlib.sha256()
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                with open(osp.join(folder, name), 'rb') as f:
                    out.update(f.read())
        return out.hexdigest()
    a = make_sample_data(str(tmp_path / 'a'), ['clevr'])['clevr']
    b = make_sample_data(str(tmp_path / 'b'), ['clevr'])['clevr']
    c = make_sample_data(str(tmp_path / 'c'), ['clevr'], seed=1)['clevr']
    assert digest(a) == digest(b) != digest(c)


def test_images_are_class_coded(roots):
    """A nearest-centroid on the mean colour classifies the ImageNet val
    images from the training images: the content carries the label."""
    root = roots['imagenet']
    train = _build(dict(type='ImageNet', data_root=root, split='train'))
    val = _build(dict(type='ImageNet', data_root=root, split='val'))

    def colours(ds):
        return np.stack([
            expected_rgb(ds.get_data_info(i)['img_path']).reshape(
                -1, 3).mean(0) for i in range(len(ds))])
    train_x, val_x = colours(train), colours(val)
    train_y, val_y = train.get_gt_labels(), val.get_gt_labels()
    centroids = np.stack([train_x[train_y == c].mean(0) for c in range(10)])
    pred = np.argmin(((val_x[:, None] - centroids[None])**2).sum(-1), 1)
    assert (pred == val_y).mean() >= 0.8  # chance: 0.1


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="formats must be among"):
        make_sample_data(str(tmp_path), ['coco'])


def test_the_tool_writes_and_corrupts(tmp_path, capsys):
    import importlib.util

    from tests._configs import REPO
    spec = importlib.util.spec_from_file_location(
        'make_sample_data', osp.join(REPO, 'tools', 'dataset_converters',
                                     'make_sample_data.py'))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    roots = tool.main([str(tmp_path), '--formats', 'kitti', 'mnist',
                       '--corrupt'])
    out = capsys.readouterr().out
    damaged = osp.join(roots['kitti'], 'training', 'image_2', '000000.png')
    assert f'truncated:\n  {damaged}' in out
    with pytest.raises(OSError):
        expected_rgb(damaged)
    assert json.dumps(sorted(roots)) == '["kitti", "mnist"]'


def test_a_real_dataset_folder_is_never_written_into(tmp_path):
    """make_sample_data refuses a format folder holding other files (a
    real dataset's annotation list would be replaced) and writes nothing;
    its own output can be rewritten."""
    real = tmp_path / 'data' / 'imagenet' / 'meta'
    real.mkdir(parents=True)
    (real / 'train.txt').write_text('n01440764/real.JPEG 0\n')
    with pytest.raises(FileExistsError, match=r"imagenet already holds files "
                       r"that make_sample_data did not write \(e.g. "
                       r"\['meta'\]\)"):
        make_sample_data(str(tmp_path / 'data'), ['clevr', 'imagenet'])
    assert (real / 'train.txt').read_text() == 'n01440764/real.JPEG 0\n'
    assert not (tmp_path / 'data' / 'clevr').exists()  # checked first
    first = make_sample_data(str(tmp_path / 'other'), ['kitti'])['kitti']
    again = make_sample_data(str(tmp_path / 'other'), ['kitti'])['kitti']
    assert first == again and os.listdir(first)
