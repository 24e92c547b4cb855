"""The decode-only loader of the batched views: safe DCT-domain reduction,
the same decoding and errors as CheckedLoadImageFromFile, padded packing."""
import math

import numpy as np
import pytest
import torch
from mmengine.registry import FUNCTIONS, init_default_scope
from mmpretrain.datasets.transforms import PackInputs

from pmsn_mm.datasets.padded_collate import padded_collate
from pmsn_mm.datasets.sample_data import class_image, truncate, write_image
from pmsn_mm.datasets.transforms import (CheckedLoadImageFromFile,
                                         ImageReadError, LoadImageForViews,
                                         largest_safe_reduction)

MSN_VIEWS = [dict(num_views=2, size=224, scale=(0.3, 1.0)),
             dict(num_views=10, size=96, scale=(0.05, 0.3))]


def _crop_short_side(h, w, s, r):
    return math.sqrt(s * h * w / r) if r >= 1 else math.sqrt(s * h * w * r)


@pytest.mark.parametrize('h, w', [(375, 500), (800, 600), (3000, 4000),
                                  (6000, 8000), (30, 40)])
def test_reduction_keeps_every_crop_at_its_output_size(h, w):
    """Brute force over a grid of crop areas and ratios of every group:
    after a chosen reduction each crop is still at least its output size,
    and the next larger factor would break that for some crop (images
    whose crops are already smaller than the outputs are not reduced)."""
    crops = [(0.3, 3 / 4, 224), (0.05, 3 / 4, 96)]
    factor = largest_safe_reduction(h, w, crops)
    assert factor in (1, 2, 4, 8)

    def smallest(d):
        return min(
            _crop_short_side(h / d, w / d, s, r) / size
            for smin, _, size in crops
            for s in np.linspace(smin, 1.0, 50)
            for r in np.geomspace(3 / 4, 4 / 3, 50))
    if factor > 1:
        assert smallest(factor) >= 1 - 1e-9
    if factor < 8:
        assert smallest(factor * 2) < 1


def _jpeg(path, h, w, kind='rgb_jpeg'):
    write_image(str(path), class_image(4, 10, h, w,
                                       np.random.default_rng(0)), kind)
    return str(path)


def test_a_large_jpeg_is_decoded_reduced_and_close_to_area_resize(tmp_path):
    path = _jpeg(tmp_path / 'big.jpg', 1600, 2400)
    load = LoadImageForViews(views=MSN_VIEWS)
    out = load(dict(img_path=path))
    assert largest_safe_reduction(1600, 2400, load.crops) == 2
    assert out['img'].shape == (800, 1200, 3)
    assert out['img_shape'] == (800, 1200)
    full = CheckedLoadImageFromFile()(dict(img_path=path))['img']
    import cv2
    area = cv2.resize(full, (1200, 800), interpolation=cv2.INTER_AREA)
    assert np.abs(out['img'].astype(int) - area).mean() < 2.0
    # EXIF rotation is applied in the reduced decode too
    rotated = _jpeg(tmp_path / 'rot.jpg', 1600, 2400, 'exif_rotated_jpeg')
    assert load(dict(img_path=rotated))['img'].shape == (800, 1200, 3)


def test_small_images_and_pngs_decode_as_load_image_from_file(tmp_path):
    load = LoadImageForViews(views=MSN_VIEWS)
    for name, kind, (h, w) in (('a.jpg', 'rgb_jpeg', (375, 500)),
                               ('b.png', 'rgb_png', (1600, 2400)),
                               ('c.jpg', 'cmyk_jpeg', (300, 200))):
        path = _jpeg(tmp_path / name, h, w, kind)
        ours = load(dict(img_path=path))['img']
        ref = CheckedLoadImageFromFile()(dict(img_path=path))['img']
        np.testing.assert_array_equal(ours, ref)
    # a group without a size (the input's) forbids any reduction
    path = _jpeg(tmp_path / 'd.jpg', 1600, 2400)
    assert LoadImageForViews(views=[dict(scale=(0.5, 1))])(
        dict(img_path=path))['img'].shape == (1600, 2400, 3)


def test_bad_files_give_load_image_from_files_errors(tmp_path):
    path = _jpeg(tmp_path / 'big.jpg', 1600, 2400)
    truncate(path)
    with pytest.raises(ImageReadError, match='Cannot decode image .*big.jpg'
                       r' \(sample 3\): .*truncated'):
        LoadImageForViews(views=MSN_VIEWS)(dict(img_path=path, sample_idx=3))
    with pytest.raises(FileNotFoundError, match='Image file not found'):
        LoadImageForViews(views=MSN_VIEWS)(
            dict(img_path=str(tmp_path / 'none.jpg')))
    with pytest.raises(ValueError, match="color_type must be 'color'"):
        LoadImageForViews(color_type='grayscale')


def test_padded_collate_packs_mixed_sizes(tmp_path):
    pack = PackInputs()
    load = LoadImageForViews(views=MSN_VIEWS)
    items = [pack(load(dict(img_path=_jpeg(tmp_path / f'{i}.jpg', h, w))))
             for i, (h, w) in enumerate([(375, 500), (500, 333), (30, 40)])]
    init_default_scope('mmpretrain')
    assert FUNCTIONS.get('padded_collate') is padded_collate
    batch = padded_collate(items)
    assert batch['inputs'].shape == (3, 3, 500, 500)
    assert batch['inputs'].dtype == torch.uint8
    for i, item in enumerate(items):
        h, w = item['data_samples'].img_shape
        torch.testing.assert_close(batch['inputs'][i, :, :h, :w],
                                   item['inputs'])
        assert int(batch['inputs'][i, :, h:, :].sum()) == 0
        assert batch['data_samples'][i].img_shape == (h, w)
    same = padded_collate(items[:1] * 2)
    assert same['inputs'].shape == (2, 3, 375, 500)
