"""CheckedLoadImageFromFile: awkward files become correct RGB (checked with
PIL); unreadable files end in an error that names the file (and the
dataset)."""
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.dataset import default_collate
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS, TRANSFORMS
from PIL import Image

from pmsn_mm.datasets.sample_data import (KINDS, class_image, expected_rgb,
                                          truncate, write_image)
from pmsn_mm.datasets.transforms import (CheckedLoadImageFromFile,
                                         ImageReadError)
from tests._downstream_layouts import inat18_json, write_inat18


def _rgb(h=48, w=64, seed=0):
    return class_image(3, 10, h, w, np.random.default_rng(seed))


def _load(path, **kwargs):
    out = CheckedLoadImageFromFile(**kwargs)(dict(img_path=path, sample_idx=7))
    return None if out is None else out['img']


def test_registered_by_its_own_name():
    from mmcv.transforms import LoadImageFromFile
    init_default_scope('mmpretrain')
    assert type(TRANSFORMS.build(dict(
        type='CheckedLoadImageFromFile'))) is CheckedLoadImageFromFile
    assert TRANSFORMS.get('LoadImageFromFile') is LoadImageFromFile


@pytest.mark.parametrize('kind', KINDS)
def test_every_kind_loads_as_pils_rgb(kind, tmp_path):
    path = str(tmp_path / f'img_{kind}')
    write_image(path, _rgb(), kind)
    img = _load(path)
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    reference = expected_rgb(path)
    assert img.shape == reference.shape
    # BGR out (mmcv's order); CMYK -> RGB rounds differently by one level
    tolerance = 1 if kind == 'cmyk_jpeg' else 0
    assert np.abs(img[..., ::-1].astype(int) - reference).max() <= tolerance


@pytest.mark.parametrize('kind, expected', [
    ('rgb_png', lambda rgb: rgb),
    ('png_as_jpeg', lambda rgb: rgb),
    ('rgba_png', lambda rgb: rgb),  # alpha dropped, colour kept
    ('rgb16_png', lambda rgb: rgb),  # high byte of v * 257
    ('gray16_png', lambda rgb: np.repeat(
        np.asarray(Image.fromarray(rgb).convert('L'))[..., None], 3, 2)),
])
def test_the_pil_reference_is_the_source_image(kind, expected, tmp_path):
    """The lossless kinds give back exactly the pixels written."""
    rgb = _rgb()
    path = str(tmp_path / 'img')
    write_image(path, rgb, kind)
    np.testing.assert_array_equal(expected_rgb(path), expected(rgb))


def test_exif_orientation_is_applied(tmp_path):
    rgb = _rgb(40, 70)
    path = str(tmp_path / 'rotated.jpg')
    write_image(path, rgb, 'exif_rotated_jpeg')
    with Image.open(path) as raw:
        assert raw.size == (40, 70)  # stored turned: width 40, height 70
    img = _load(path)[..., ::-1].astype(int)
    assert img.shape == (40, 70, 3)
    upright = np.abs(img - rgb).mean()  # JPEG loss only
    assert upright < 10
    assert np.abs(img[:, ::-1] - rgb).mean() > 3 * upright  # not mirrored
    assert np.abs(img[::-1] - rgb).mean() > 3 * upright  # not flipped


def test_an_image_smaller_than_the_crop_loads(tmp_path):
    path = str(tmp_path / 'tiny.jpg')
    write_image(path, _rgb(30, 40))
    assert _load(path).shape == (30, 40, 3)


@pytest.mark.parametrize('content, reason', [
    ('truncated', 'truncated'),
    (b'', 'the file is empty'),
    (b'<html>404</html>', 'cannot identify image file'),
])
def test_unreadable_files_name_the_file_and_reason(content, reason,
                                                   tmp_path):
    path = str(tmp_path / 'bad.jpg')
    if content == 'truncated':
        write_image(path, _rgb())
        truncate(path)
    else:
        with open(path, 'wb') as f:
            f.write(content)
    with pytest.raises(ImageReadError) as info:
        _load(path)
    message = str(info.value)
    assert message.startswith(f'Cannot decode image {path} (sample 7): ')
    assert reason in message
    # an image folder has no annotation file: the advice fits both kinds
    assert message.endswith('replace or delete it (and drop it from the '
                            'annotation file that lists it, if the dataset '
                            'has one).')
    assert _load(path, ignore_empty=True) is None


def test_a_missing_file_is_named(tmp_path):
    path = str(tmp_path / 'nowhere.jpg')
    with pytest.raises(FileNotFoundError,
                       match=f'Image file not found: {path} \\(sample 7\\)'):
        _load(path)
    assert _load(path, ignore_empty=True) is None


def test_ignore_empty_covers_every_unreadable_path(tmp_path):
    """With ignore_empty a path that cannot be read at all (a directory)
    returns None, as mmcv's transform does; without it the OS error is
    raised."""
    folder = tmp_path / 'a_folder.jpg'
    folder.mkdir()
    assert _load(str(folder), ignore_empty=True) is None
    with pytest.raises(IsADirectoryError):
        _load(str(folder))


def _inat_with_a_truncated_image(tmp_path):
    root = str(tmp_path / 'inat18')
    images = [(i, f'train_val2018/Aves/{i}/{i}.jpg', i) for i in range(3)]
    write_inat18(str(tmp_path), inat18_json(images), inat18_json(images))
    for i, name, _ in images:
        write_image(osp.join(root, name), _rgb(seed=i))
    truncate(osp.join(root, images[1][1]))
    init_default_scope('mmpretrain')
    return DATASETS.build(
        dict(type='INat18', data_root=root, split='train',
             pipeline=[dict(type='CheckedLoadImageFromFile'),
                       dict(type='PackInputs')])), root


def test_the_dataset_is_named_too(tmp_path):
    dataset, root = _inat_with_a_truncated_image(tmp_path)
    assert dataset[0]['inputs'].shape == (3, 48, 64)
    with pytest.raises(ImageReadError) as info:
        dataset[1]
    assert str(info.value).startswith(
        f"INat18 (data_root='{root}', split='train'): Cannot decode image "
        f'{root}/train_val2018/Aves/1/1.jpg (sample 1): ')


def test_a_worker_process_raises_instead_of_hanging(tmp_path):
    dataset, root = _inat_with_a_truncated_image(tmp_path)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=3, num_workers=1, collate_fn=default_collate,
        timeout=60)
    with pytest.raises(ImageReadError, match=r'Aves/1/1\.jpg'):
        next(iter(loader))
