"""Batched view augmentations against mmpretrain's per-sample transforms."""
import mmcv
import numpy as np
import pytest
import torch
from mmpretrain.datasets.transforms import RandomResizedCrop
from scipy import stats

from pmsn_mm.models.data_preprocessors.views import (color_jitter,
                                                     crop_corners,
                                                     device_constant)
from tests._views import crop_boxes, crop_boxes_out, draw_color_params

N = 4000


def _mmpretrain_boxes(n, height, width, scale, seed=0):
    np.random.seed(seed)
    rrc = RandomResizedCrop(scale=height, crop_ratio_range=scale)
    img = np.zeros((height, width, 1), dtype=np.uint8)
    return np.array([rrc.rand_crop_params(img) for _ in range(n)])


def _area_and_ratio(boxes, height, width):
    boxes = np.asarray(boxes, dtype=np.float64)
    area = boxes[:, 2] * boxes[:, 3] / (height * width)
    return area, boxes[:, 3] / boxes[:, 2]


@pytest.mark.parametrize('scale', [(0.5, 1.0), (0.08, 1.0)])
def test_crop_boxes_match_mmpretrain_distribution(scale):
    gen = torch.Generator().manual_seed(0)
    ours = crop_boxes(N, 20, 20, scale, generator=gen).numpy()
    ref = _mmpretrain_boxes(N, 20, 20, scale)
    # every box lies inside the image
    assert (ours[:, 0] >= 0).all() and (ours[:, 1] >= 0).all()
    assert (ours[:, 0] + ours[:, 2] <= 20).all()
    assert (ours[:, 1] + ours[:, 3] <= 20).all()
    area, ratio = _area_and_ratio(ours, 20, 20)
    ref_area, ref_ratio = _area_and_ratio(ref[:, [0, 1, 2, 3]], 20, 20)
    assert stats.ks_2samp(area, ref_area).pvalue > 1e-3
    assert stats.ks_2samp(ratio, ref_ratio).pvalue > 1e-3
    # offsets: uniform over the free range, as mmpretrain
    assert stats.ks_2samp(ours[:, 0] / (21 - ours[:, 2]),
                          ref[:, 0] / (21 - ref[:, 2])).pvalue > 1e-3


def test_crop_distribution_test_has_power():
    gen = torch.Generator().manual_seed(0)
    ours = crop_boxes(N, 20, 20, (0.5, 1.0), generator=gen).numpy()
    ref = _mmpretrain_boxes(N, 20, 20, (0.08, 1.0))
    area, _ = _area_and_ratio(ours, 20, 20)
    ref_area, _ = _area_and_ratio(ref, 20, 20)
    assert stats.ks_2samp(area, ref_area).pvalue < 1e-6


def test_crop_fallback_is_central_whole_image():
    # no aspect ratio in (10, 11) fits a square image: central fallback
    boxes = crop_boxes(5, 16, 16, (0.9, 1.0), (10.0, 11.0))
    rrc = RandomResizedCrop(
        scale=16, crop_ratio_range=(0.9, 1.0), aspect_ratio_range=(10, 11))
    expected = rrc.rand_crop_params(np.zeros((16, 16, 1), np.uint8))
    assert boxes.tolist() == [list(expected)] * 5


@pytest.mark.parametrize('kwargs', [
    dict(scale=(0.0, 1.0)),
    dict(scale=(0.6, 0.5)),
    dict(scale=(0.5, 1.5)),
    dict(ratio=(0.0, 1.0)),
    dict(max_attempts=0),
])
def test_crop_box_errors(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        crop_boxes(2, 8, 8, **kwargs)


def test_crop_corners_are_view_major_with_the_central_fallback():
    """Views of two images (10 x 10, and 300 wide x 200 high) at scale 1:
    no ratio but exactly 1 fits the square, 300 / 200 is wider than 4 / 3,
    so every box is mmpretrain's fallback, computed by hand: the whole
    square, and the central 267 x 200 (round(200 * 4 / 3)) at left 16; box
    ``v * 2 + i`` is view ``v`` of image ``i``."""
    corner, extent = crop_corners(torch.tensor([[10, 10], [300, 200]]), 3,
                                  scale=(1.0, 1.0))
    assert extent.tolist() == [[10.0, 10.0], [267.0, 200.0]] * 3
    assert corner.tolist() == [[0.0, 0.0], [16.0, 0.0]] * 3


def test_crop_corners_needs_sizes_of_shape_n_by_2():
    with pytest.raises(ValueError, match=r'sizes must have shape \(N, 2\)'):
        crop_corners(torch.tensor([10, 10]))


def test_device_constant_is_built_once_per_device():
    calls = []

    def build():
        calls.append(1)
        return [1.0, 2.0]

    first = device_constant(('test constant', id(calls)), 'cpu', build)
    again = device_constant(('test constant', id(calls)), 'cpu', build)
    assert again is first and len(calls) == 1
    assert first.tolist() == [1.0, 2.0] and first.dtype == torch.float32


def test_resized_crop_identity_slice_and_flip():
    img = torch.arange(2 * 1 * 8 * 8, dtype=torch.float32).reshape(2, 1, 8, 8)
    full = torch.tensor([[0, 0, 8, 8]] * 2)
    torch.testing.assert_close(crop_boxes_out(img, full, (8, 8)), img)
    # a 4x4 crop resized to 4x4 is the slice itself
    box = torch.tensor([[2, 3, 4, 4], [0, 4, 4, 4]])
    out = crop_boxes_out(img, box, (4, 4))
    torch.testing.assert_close(out[0], img[0, :, 2:6, 3:7])
    torch.testing.assert_close(out[1], img[1, :, 0:4, 4:8])
    flipped = crop_boxes_out(img, box, (4, 4), torch.tensor([True, False]))
    torch.testing.assert_close(flipped[0], img[0, :, 2:6, 3:7].flip(-1))
    torch.testing.assert_close(flipped[1], out[1])


def test_resized_crop_upscale_matches_cv2_bilinear():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=(12, 12)).astype(np.uint8)
    box = torch.tensor([[2, 1, 8, 6]])  # top, left, h, w
    out = crop_boxes_out(
        torch.from_numpy(img).float()[None, None], box, (16, 16))[0, 0]
    ref = mmcv.imresize(
        img[2:10, 1:7].astype(np.float32), (16, 16),
        interpolation='bilinear')
    # same half-pixel convention; cv2 clamps at the crop border, we sample
    # the neighbouring image pixels there, so compare the interior
    np.testing.assert_allclose(out.numpy()[2:-2, 2:-2], ref[2:-2, 2:-2],
                               atol=1e-3)


def test_color_jitter_formulas_match_mmcv():
    """Contrast and brightness alone, each image with its drawn factor,
    against mmcv's per-image functions (the per-sample transform's)."""
    rng = np.random.default_rng(1)
    img = rng.integers(20, 200, size=(64, 1, 6, 6)).astype(np.float32)
    x = torch.from_numpy(img)
    gen = torch.Generator().manual_seed(0)
    params = draw_color_params(64, contrast=0.4, generator=gen)
    out = color_jitter(x, params).numpy()
    factors = params['factors'][:, 1].numpy()
    assert 0.6 <= factors.min() and factors.max() <= 1.4
    for i in range(len(img)):
        three = np.repeat(img[i, 0][..., None], 3, -1).astype(np.uint8)
        ref = mmcv.adjust_contrast(three, float(factors[i]))[..., 0]
        # PIL rounds the grey mean and each result; the device keeps floats
        np.testing.assert_allclose(out[i, 0], ref, atol=1.5)
    params = draw_color_params(64, brightness=0.4, generator=gen)
    out = color_jitter(x, params).numpy()
    f = params['factors'][:, 0].numpy()[:, None, None, None]
    np.testing.assert_allclose(out, np.clip(img * f, 0, 255), rtol=1e-5,
                               atol=1e-3)


def test_color_jitter_rate():
    x = torch.full((N, 1, 2, 2), 100.0)
    x[:, :, 0, 0] = 50.0
    gen = torch.Generator().manual_seed(0)
    params = draw_color_params(N, 0.4, 0.4, prob=0.8, generator=gen)
    out = color_jitter(x, params)
    changed = (out != x).flatten(1).any(dim=1).float().mean().item()
    # binomial(N, 0.8): 4 sigma = 0.025
    assert abs(changed - 0.8) < 0.025
    changed_rows = (out != x).flatten(1).any(1)
    assert not bool(changed_rows[~params['apply']].any())
    none = draw_color_params(8, 0.4, 0.4, prob=0.0)
    torch.testing.assert_close(color_jitter(x[:8], none), x[:8])
