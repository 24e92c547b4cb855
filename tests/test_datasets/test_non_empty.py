"""An empty dataset is reported with its type, root and split."""
import importlib.util
import os.path as osp

import pytest

from pmsn_mm.datasets import INat18, PowerLawOverlayDataset
from pmsn_mm.datasets.non_empty import NonEmptyDatasetMixin
from tests._configs import REPO, TINY_PMSN, write_config
from tests._downstream_layouts import inat18_json, write_inat18

EMPTY_INAT18 = """
_base_ = './tiny.py'
train_dataloader = dict(
    dataset=dict(_delete_=True, type='INat18', data_root='unset',
                 split='train', pipeline=[dict(type='PackInputs')]))
"""


# serialize_data=False used to end in ZeroDivisionError (DefaultSampler),
# True in 'need at least one array to concatenate'
@pytest.mark.parametrize('serialize', [True, False])
def test_empty_dataset_through_train_py(tmp_path, serialize):
    root = write_inat18(str(tmp_path), inat18_json([]), inat18_json([]))
    write_config(tmp_path, TINY_PMSN)
    cfg = write_config(tmp_path, EMPTY_INAT18, 'empty.py')
    spec = importlib.util.spec_from_file_location(
        'tool_train_empty', osp.join(REPO, 'tools', 'train.py'))
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    with pytest.raises(ValueError) as info:
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--cfg-options',
            f'train_dataloader.dataset.data_root={root}',
            'train_dataloader.dataset.split=val',
            f'train_dataloader.dataset.serialize_data={serialize}',
            f'experiment_name=empty-{serialize}'
        ])
    assert str(info.value) == (
        f"INat18 is empty (data_root='{root}', split='val'): no samples were "
        'found. Check that data_root points at the prepared dataset and that '
        'the split has images.')


def test_empty_after_filtering_names_the_filter():

    class _Base:
        data_root, split, ann_file = 'data/x', 'train', 'ann.json'
        filter_cfg = dict(min_size=32)
        data_list = [dict(img_path='a.jpg')] * 3

        def filter_data(self):
            return []

    class Filtered(NonEmptyDatasetMixin, _Base):
        pass

    with pytest.raises(ValueError) as info:
        Filtered().filter_data()
    assert str(info.value) == (
        "Filtered is empty (data_root='data/x', split='train', "
        "ann_file='ann.json'): all 3 loaded samples were removed by "
        "filter_cfg={'min_size': 32}. Check that data_root points at the "
        'prepared dataset and that the split has images.')


def test_non_empty_dataset_is_untouched(tmp_path):
    root = write_inat18(
        str(tmp_path), inat18_json([(1, 'train_val2018/a.jpg', 3)]),
        inat18_json([]))
    assert list(INat18(data_root=root, split='train').get_gt_labels()) == [3]


def _inat18_root(tmp_path) -> str:
    images = [(1, 'train_val2018/a.jpg', 3), (2, 'train_val2018/b.jpg', 5),
              (3, 'train_val2018/c.jpg', 3)]
    return write_inat18(str(tmp_path), inat18_json(images), inat18_json([]))


# mmengine applies `indices` after the project's empty check: [] used to end
# in 'need at least one array to concatenate' (serialize_data=True) or a
# ZeroDivisionError in the sampler (False)
@pytest.mark.parametrize('serialize', [True, False])
@pytest.mark.parametrize('indices', [[], 0])
def test_indices_selecting_nothing_names_the_setting(tmp_path, serialize,
                                                     indices):
    root = _inat18_root(tmp_path)
    with pytest.raises(ValueError) as info:
        INat18(data_root=root, split='train', indices=indices,
               serialize_data=serialize)
    assert str(info.value) == (
        f"INat18 is empty (data_root='{root}', split='train'): "
        f'indices={indices!r} selects none of its 3 samples. Set indices to '
        'None (every sample), a count of samples (first n, or last n if '
        'negative) or a non-empty list of sample indices.')


@pytest.mark.parametrize('serialize', [True, False])
def test_indices_selecting_nothing_in_memory_toy_set(serialize):
    with pytest.raises(ValueError, match=r'^PowerLawOverlayDataset is empty '
                       r"\(data_root='', split='test'\): indices=\[\] "
                       'selects none of its 20 samples'):
        PowerLawOverlayDataset(split='test', num_samples=20, image_size=20,
                               digit_size=10, background_source='shapes',
                               channels=1, indices=[],
                               serialize_data=serialize)


def test_empty_indices_after_filtering_says_so():

    class _Base:
        data_root, split, ann_file = 'data/x', 'train', ''
        filter_cfg = dict(min_size=32)
        data_list = [dict(img_path='a.jpg')] * 3
        _indices = []

        def filter_data(self):
            return self.data_list[:2]

    class Filtered(NonEmptyDatasetMixin, _Base):
        pass

    with pytest.raises(ValueError, match='indices=\\[\\] selects none of its '
                       '2 samples left after filter_cfg. '):
        Filtered().filter_data()


@pytest.mark.parametrize('serialize', [True, False])
@pytest.mark.parametrize('indices,labels', [([2, 0], [3, 3]), (1, [3]),
                                            (-1, [3]), ([1], [5])])
def test_indices_selecting_samples_are_untouched(tmp_path, serialize, indices,
                                                 labels):
    dataset = INat18(data_root=_inat18_root(tmp_path), split='train',
                     indices=indices, serialize_data=serialize)
    assert list(dataset.get_gt_labels()) == labels


@pytest.mark.parametrize('serialize', [True, False])
def test_empty_indices_through_train_py(tmp_path, serialize):
    root = _inat18_root(tmp_path)
    write_config(tmp_path, TINY_PMSN)
    cfg = write_config(tmp_path, EMPTY_INAT18, 'empty.py')
    spec = importlib.util.spec_from_file_location(
        'tool_train_empty_indices', osp.join(REPO, 'tools', 'train.py'))
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    with pytest.raises(ValueError, match=r"^INat18 is empty \(data_root='"
                       r".*', split='train'\): indices=\[\] selects none"):
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--cfg-options',
            f'train_dataloader.dataset.data_root={root}',
            'train_dataloader.dataset.indices=[]',
            f'train_dataloader.dataset.serialize_data={serialize}',
            f'experiment_name=empty-indices-{serialize}'
        ])


def test_folder_smaller_than_a_batch_names_the_numbers(tmp_path,
                                                       monkeypatch):
    """The README's own-images command on a folder of 30 images (batch 128
    with drop_last): the count, the batch and the setting to lower, before
    mmengine's `epoch_length must be a positive integer, but got 0`."""
    from tests._image_folders import write_flat_folder
    from tests._tools import load_tool
    folder = write_flat_folder(tmp_path / 'my_images', 30)
    monkeypatch.setenv('IMAGE_FOLDER', folder)
    config = osp.join(REPO, 'configs', 'pmsn',
                      'pmsn_vit-small-p16_32xb128-300e_image-folder.py')
    with pytest.raises(ValueError) as info:
        load_tool('tools/train.py').main([
            config, '--work-dir', str(tmp_path / 'wd'), '--cfg-options',
            'train_dataloader.num_workers=0',
            'train_dataloader.persistent_workers=False'])
    message = str(info.value)
    assert message.startswith('train_dataloader gives no batch: its '
                              f"ImageFolderDataset (data_root='{folder}'")
    assert ('has 30 images and one batch needs 128 per GPU x 1 GPU(s) with '
            'drop_last=True') in message
    assert '--cfg-options train_dataloader.batch_size=30' in message
