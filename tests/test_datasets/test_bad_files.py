"""A truncated image in a real dataset layout ends in an error that names
the file (and, for pmsn_mm's datasets, the dataset), through tools/train.py
with dataloader workers, and for every image-file format's reader."""
import importlib.util
import os.path as osp

import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS

from pmsn_mm.datasets.sample_data import make_sample_data, truncate
from pmsn_mm.datasets.transforms import ImageReadError
from tests._config_runs import shrink
from tests._configs import CONFIGS, REPO
from tests._tools import load_tool

#: format -> (a config reading it, the dataset type its error names or None)
READERS = {
    'imagenet': ('pmsn/pmsn_vit-base-p16_16xb64-300e_in1k-uniform.py', None),
    'inat18': ('pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py',
               'INat18'),
    'places205': ('pmsn/benchmarks/vit-small-p16-lastcls_8xb32-linear-'
                  'steplr-14e_places205.py', 'Places205Sorted'),
    'clevr': ('pmsn/benchmarks/vit-small-p16-lastcls_8xb32-linear-coslr-'
              '50e_clevr-count.py', 'CLEVRCount'),
    'kitti': ('pmsn/benchmarks/vit-small-p16-lastcls_8xb32-linear-steplr-'
              '28e_kitti-dist.py', 'KITTIDist'),
}


first_train_image = load_tool(
    'tools/dataset_converters/make_sample_data.py').first_train_image


@pytest.fixture(scope='module')
def corrupted(tmp_path_factory):
    """Sample data whose first training image of every format is cut."""
    root = tmp_path_factory.mktemp('corrupt')
    roots = make_sample_data(str(root / 'data'), list(READERS),
                             inat18_all_classes=False)
    paths = {}
    for name, data_root in roots.items():
        paths[name] = first_train_image(name, data_root)
        truncate(paths[name])
    return root, paths


def _expected_start(name, path, dataset_type, cfg):
    where = f'Cannot decode image {path} (sample 0): '
    if dataset_type is None:
        return where
    ds = cfg.train_dataloader.dataset
    return f"{dataset_type} (data_root={ds.data_root!r}, split='train'"


@pytest.mark.parametrize('name', sorted(READERS))
def test_the_reader_names_the_file_and_dataset(name, corrupted,
                                               monkeypatch):
    root, paths = corrupted
    monkeypatch.chdir(root)
    config, dataset_type = READERS[name]
    cfg = Config.fromfile(osp.join(CONFIGS, config))
    init_default_scope('mmpretrain')
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    index = next(i for i in range(len(dataset))
                 if osp.samefile(dataset.get_data_info(i)['img_path'],
                                 paths[name]))
    with pytest.raises(ImageReadError) as info:
        dataset[index]
    message = str(info.value)
    assert 'truncated' in message
    assert f'Cannot decode image {dataset.get_data_info(index)["img_path"]}'\
        in message
    if dataset_type is not None:
        assert message.startswith(f'{dataset_type} (data_root=')


@pytest.mark.parametrize('name, workers', [('imagenet', 0), ('inat18', 1)])
def test_training_stops_with_the_file_named(name, workers, corrupted,
                                            tmp_path, monkeypatch):
    """Through tools/train.py, in the main process and in a dataloader
    worker process: the run raises (no hang, no silently wrong batch).
    (torch then takes ~5 s per worker to shut the loader down.)"""
    root, paths = corrupted
    monkeypatch.chdir(root)
    cfg = shrink(Config.fromfile(osp.join(CONFIGS, READERS[name][0])),
                 str(tmp_path / 'work'))
    cfg.train_dataloader.update(num_workers=workers)
    config = str(tmp_path / 'cfg.py')
    cfg.dump(config)
    spec = importlib.util.spec_from_file_location(
        'tool_train_bad', osp.join(REPO, 'tools', 'train.py'))
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    with pytest.raises(ImageReadError) as info:
        train.main([config])
    message = str(info.value)
    assert ('DataLoader worker process' in message) == (workers > 0)
    assert osp.relpath(paths[name], str(root)) in message
    assert 'image file is truncated' in message
