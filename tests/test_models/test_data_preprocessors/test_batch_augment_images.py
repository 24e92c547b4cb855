"""Views of real images drawn batched on the device, against the per-sample
transforms: distributions (KS / chi-square over many draws) and pixels for
fixed parameters (to the tolerances stated in each test)."""
import itertools

import mmcv
import numpy as np
import pytest
import torch
from mmpretrain.datasets.transforms import GaussianBlur, RandomGrayscale
from mmpretrain.datasets.transforms import RandomResizedCrop as MMPretrainRRC
from mmpretrain.registry import MODELS
from PIL import Image, ImageFilter
from scipy import stats
from torchvision.transforms import ColorJitter as TVColorJitter

from pmsn_mm.datasets.sample_data import class_image
from pmsn_mm.datasets.transforms import adjust_hue
from pmsn_mm.models.data_preprocessors.views import (color_jitter,
                                                     gaussian_blur,
                                                     random_grayscale,
                                                     replicate_edges,
                                                     rotate_hue, solarize)
from tests._views import crop_boxes, crop_boxes_out, draw_color_params

N = 4000
#: (height, width) of a mixed batch: landscape, portrait, square, tiny
SIZES = [(375, 500), (500, 333), (256, 256), (30, 40)]


def _rgb(h, w, seed=0, label=3):
    return class_image(label, 10, h, w, np.random.default_rng(seed))


def _tensor(rgb):
    return torch.from_numpy(np.ascontiguousarray(rgb)).permute(
        2, 0, 1).float()[None]


# ------------------------------------------------------------------ crops
def _reference_boxes(n, h, w, scale, seed):
    np.random.seed(seed)
    rrc = MMPretrainRRC(scale=224, crop_ratio_range=scale)
    img = np.zeros((h, w, 1), dtype=np.uint8)
    return np.array([rrc.rand_crop_params(img) for _ in range(n)],
                    dtype=np.float64)


@pytest.mark.parametrize('scale', [(0.3, 1.0), (0.05, 0.3)])
def test_crops_of_a_mixed_batch_follow_each_images_own_size(scale):
    """Area fraction, aspect ratio and position of the crops, in each
    image's coordinates, match mmpretrain's RandomResizedCrop on an image of
    that size (all sizes drawn in one batch)."""
    heights = torch.tensor([h for h, _ in SIZES]).repeat(N)
    widths = torch.tensor([w for _, w in SIZES]).repeat(N)
    gen = torch.Generator().manual_seed(0)
    boxes = crop_boxes(len(heights), heights, widths, scale,
                       generator=gen).double().numpy()
    for k, (h, w) in enumerate(SIZES):
        ours = boxes[k::len(SIZES)]
        ref = _reference_boxes(N, h, w, scale, seed=k)
        assert (ours[:, 0] + ours[:, 2] <= h).all()
        assert (ours[:, 1] + ours[:, 3] <= w).all() and (ours >= 0).all()
        for column in (
                lambda b: b[:, 2] * b[:, 3] / (h * w),  # area fraction
                lambda b: b[:, 3] / b[:, 2],  # aspect ratio
                lambda b: b[:, 0] / (h - b[:, 2] + 1),  # top, in [0, 1)
                lambda b: b[:, 1] / (w - b[:, 3] + 1)):  # left
            assert stats.ks_2samp(column(ours), column(ref)).pvalue > 1e-3


def test_the_crop_test_sees_a_wrong_size():
    """Power: crops drawn for the padded batch size instead of the image's
    own size fail the same test."""
    gen = torch.Generator().manual_seed(0)
    wrong = crop_boxes(N, 500, 500, (0.3, 1.0),
                       generator=gen).double().numpy()
    ref = _reference_boxes(N, 375, 500, (0.3, 1.0), seed=0)
    area = wrong[:, 2] * wrong[:, 3] / (375 * 500)
    ref_area = ref[:, 2] * ref[:, 3] / (375 * 500)
    assert stats.ks_2samp(area, ref_area).pvalue < 1e-6


@pytest.mark.parametrize('box, size', [((20, 30, 250, 330), 224),
                                       ((0, 0, 300, 400), 224),
                                       ((50, 60, 100, 80), 96)])
def test_a_fixed_crop_matches_pil_resize(box, size):
    """roi_align (averaging bilinear samples when shrinking) against
    mmpretrain's crop + PIL bilinear resize of the same box: mean absolute
    difference <= 1 grey level, 99th percentile <= 4."""
    rgb = _rgb(300, 400)
    top, left, h, w = box
    ref = mmcv.imresize(rgb[top:top + h, left:left + w], (size, size),
                        interpolation='bilinear', backend='pillow')
    out = crop_boxes_out(_tensor(rgb), torch.tensor([box]),
                         (size, size))[0].permute(1, 2, 0).numpy()
    diff = np.abs(out - ref)
    assert diff.mean() <= 1.0 and np.percentile(diff, 99) <= 4.0


def test_padding_never_enters_a_crop():
    """Images of a padded batch hold one grey level each; the padding holds
    another. After replicate_edges, every crop of every image (the largest
    and the smallest boxes, corners included) shows only its image's level."""
    levels = [40.0, 90.0, 140.0, 190.0]
    batch = torch.full((4, 3, 500, 500), 255.0)  # the padding
    heights = torch.tensor([h for h, _ in SIZES])
    widths = torch.tensor([w for _, w in SIZES])
    for i, (h, w) in enumerate(SIZES):
        batch[i, :, :h, :w] = levels[i]
    batch = replicate_edges(batch, heights, widths)
    gen = torch.Generator().manual_seed(0)
    image = torch.arange(4).repeat(40)
    for scale, size in (((0.3, 1.0), 224), ((0.05, 0.3), 96),
                        ((1.0, 1.0), 224)):
        boxes = crop_boxes(len(image), heights[image], widths[image],
                           scale, generator=gen)
        views = crop_boxes_out(batch, boxes, (size, size),
                               torch.rand(len(image)) < 0.5, image)
        expected = torch.tensor(levels)[image].view(-1, 1, 1, 1)
        torch.testing.assert_close(views, expected.expand_as(views))


# ------------------------------------------------------------------ colour
def test_color_factors_order_and_rate_match_torchvision():
    """Each factor's distribution (KS) and the order of the four
    adjustments (chi-square over the 24 permutations) against
    torchvision's ColorJitter.get_params; RandomApply's rate."""
    b, c, s, h = 0.4, 0.4, 0.2, 0.1
    gen = torch.Generator().manual_seed(0)
    ours = draw_color_params(N, b, c, s, h, prob=0.8, generator=gen)
    applied = ours['apply']
    assert abs(applied.float().mean().item() - 0.8) < 4 * (0.16 / N)**0.5
    jitter = TVColorJitter(b, c, s, h)
    torch.manual_seed(1)
    ref = [jitter.get_params(jitter.brightness, jitter.contrast,
                             jitter.saturation, jitter.hue)
           for _ in range(N)]
    ref_factors = np.array([[r[1], r[2], r[3], r[4]] for r in ref])
    factors = ours['factors'][applied].numpy()
    for k in range(4):
        assert stats.ks_2samp(factors[:, k],
                              ref_factors[:, k]).pvalue > 1e-3
    perms = list(itertools.permutations(range(4)))
    count_ours = np.zeros(24)
    count_ref = np.zeros(24)
    for row in ours['order'].tolist():
        count_ours[perms.index(tuple(row))] += 1
    for r in ref:
        count_ref[perms.index(tuple(r[0].tolist()))] += 1
    assert stats.chi2_contingency([count_ours, count_ref]).pvalue > 1e-3
    # where not applied, every factor is the identity
    neutral = torch.tensor([1.0, 1.0, 1.0, 0.0])
    assert torch.equal(ours['factors'][~applied],
                       neutral.expand(int((~applied).sum()), 4))


def _mmcv_chain(rgb, factors, order):
    """mmpretrain's ColorJitter for fixed factors and order (BGR, PIL)."""
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    for k in order:
        if k == 0:
            bgr = mmcv.adjust_brightness(bgr, factors[0], backend='pillow')
        elif k == 1:
            bgr = mmcv.adjust_contrast(bgr, factors[1], backend='pillow')
        elif k == 2:
            bgr = mmcv.adjust_color(bgr, alpha=factors[2], backend='pillow')
        else:
            bgr = adjust_hue(bgr, factors[3], backend='pillow')
    return bgr[..., ::-1].astype(np.float64)


@pytest.mark.parametrize('factors, order', [
    ((1.3, 0.7, 1.2, 0.08), (0, 1, 2, 3)),
    ((0.6, 1.4, 0.8, -0.1), (3, 2, 1, 0)),
    ((1.0, 1.0, 1.0, 0.3), (3, 0, 1, 2)),
    ((1.0, 1.0, 0.2, 0.0), (2, 0, 1, 3)),
])
def test_fixed_colour_params_match_the_per_sample_chain(factors, order):
    """The same factors in the same order as mmpretrain's ColorJitter (PIL,
    8-bit after every step): mean absolute difference <= 1.5 levels, max
    <= 8 (HSV and grey rounding)."""
    rgb = _rgb(64, 64, label=5)
    params = dict(factors=torch.tensor([factors]),
                  order=torch.tensor([order]), apply=torch.tensor([True]))
    out = color_jitter(_tensor(rgb), params)[0].permute(1, 2, 0).numpy()
    diff = np.abs(out - _mmcv_chain(rgb, factors, order))
    assert diff.mean() <= 1.5 and diff.max() <= 8.0


#: Hue factors across ColorJitter's range, float32 as torch draws them.
HUE_FACTORS = np.linspace(-0.5, 0.5, 81, dtype=np.float32)


def _hue_differences(rgb: np.ndarray, pil: bool) -> np.ndarray:
    """|rotate_hue - torchvision's adjust_hue of a PIL image| of an RGB
    uint8 image, for every factor of :data:`HUE_FACTORS`."""
    from torchvision.transforms.functional import adjust_hue as tv_hue
    image = Image.fromarray(rgb)
    diffs = []
    for factor in HUE_FACTORS:
        ref = np.asarray(tv_hue(image, float(factor)), dtype=np.float64)
        out = rotate_hue(_tensor(rgb), torch.tensor([factor]), pil=pil)
        diffs.append(np.abs(out[0].permute(1, 2, 0).numpy() - ref))
    return np.stack(diffs)


def test_hue_on_pils_8bit_circle_matches_torchvision():
    """rotate_hue(pil=True) against torchvision's adjust_hue of a PIL image
    (official MSN's ColorJitter): PIL keeps the hue in 8 bits and adds the
    shift in uint8 (modulo 256 on a 255-step circle), so a red rotated by a
    negative factor turns one step (6 levels) less than the factor says.
    Saturated colours within one level (the continuous rotation misses
    them by a step); random colours within 2 levels but for 1 % of the
    pixels (PIL's 8-bit saturation, and float32 rounding that puts an exact
    step of hue on the other side), all within one step."""
    vivid = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0],
                       [0, 255, 255], [255, 0, 255], [220, 40, 40],
                       [128, 128, 128]]], dtype=np.uint8)
    assert _hue_differences(vivid, pil=True).max() <= 1.0
    assert _hue_differences(vivid, pil=False).max() >= 5.0
    rgb = np.random.default_rng(0).integers(0, 256, (16, 16, 3),
                                            dtype=np.uint8)
    diff = _hue_differences(rgb, pil=True)
    assert (diff > 2.0).mean() < 0.01 and diff.max() <= 7.0


def test_colour_needs_rgb_for_saturation_and_hue():
    params = draw_color_params(2, saturation=0.5, prob=1.0)
    with pytest.raises(ValueError, match='need RGB images'):
        color_jitter(torch.zeros(2, 1, 4, 4), params)


def test_grayscale_matches_mmpretrain_and_rate():
    rgb = _rgb(32, 32)
    gray = random_grayscale(_tensor(rgb), torch.tensor([True]))[0]
    ref = RandomGrayscale(prob=1.0, keep_channels=True,
                          channel_weights=(0.114, 0.587, 0.2989))(
                              dict(img=rgb[..., ::-1].copy()))['img']
    # mmpretrain truncates to uint8; within one level
    assert np.abs(gray.permute(1, 2, 0).numpy() - ref).max() <= 1.0
    mask = torch.tensor([False])
    torch.testing.assert_close(random_grayscale(_tensor(rgb), mask),
                               _tensor(rgb))


def test_blur_sigma_matches_mmpretrain_and_pixels_match_pil():
    """sigma ~ U(0.1, 2) as mmpretrain's GaussianBlur(magnitude_range=(0.1,
    2), magnitude_std='inf') draws it; for a fixed sigma the interior of the
    blurred image is within 1.5 levels of PIL's (which approximates the
    Gaussian with box filters) on average."""
    blur = GaussianBlur(magnitude_range=(0.1, 2.0), magnitude_std='inf',
                        prob=1.0)
    np.random.seed(0)
    ref = np.array([blur.random_magnitude() for _ in range(N)])
    u = torch.rand(N, generator=torch.Generator().manual_seed(0))
    ours = (0.1 + 1.9 * u).numpy()
    assert stats.ks_2samp(ours, ref).pvalue > 1e-3
    rgb = _rgb(64, 64)
    for sigma in (0.5, 1.0, 2.0):
        out = gaussian_blur(_tensor(rgb), torch.tensor([sigma]),
                            torch.tensor([True]), 2.0)[0]
        pil = np.asarray(Image.fromarray(rgb).filter(
            ImageFilter.GaussianBlur(radius=sigma)), dtype=np.float64)
        diff = np.abs(out.permute(1, 2, 0).numpy() - pil)[8:-8, 8:-8]
        assert diff.mean() <= 1.5


def test_solarize_is_mmcvs():
    rgb = _rgb(16, 16)
    out = solarize(_tensor(rgb), torch.tensor([True]), 128.0)[0]
    ref = mmcv.solarize(rgb, 128)
    np.testing.assert_array_equal(out.permute(1, 2, 0).numpy(), ref)


# ------------------------------------------------------ the pre-processor
MSN_COLOUR = dict(flip_prob=0.5, jitter_prob=0.8, brightness=0.4,
                  contrast=0.4, saturation=0.2, hue=0.1, grayscale_prob=0.2,
                  blur_prob=0.5, blur_sigma=(0.1, 2.0))
MSN_VIEWS = [dict(num_views=2, size=32, scale=(0.3, 1.0), **MSN_COLOUR),
             dict(num_views=10, size=16, scale=(0.05, 0.3), **MSN_COLOUR)]


class _Sample:
    """A packed data sample with its image size."""

    def __init__(self, h, w):
        self.img_shape = (h, w)


def _padded_batch(levels):
    batch = torch.full((len(SIZES), 3, 500, 500), 255, dtype=torch.uint8)
    for i, (h, w) in enumerate(SIZES):
        batch[i, :, :h, :w] = levels[i]
    return dict(inputs=batch, data_samples=[_Sample(h, w) for h, w in SIZES])


def test_views_come_in_order_and_from_their_own_image():
    """MSN's groups: 2 views of 32 px then 10 of 16 px, each a (B, 3, S, S)
    tensor whose row i comes from image i and never from the padding
    (grey images: colour jitter only scales the grey level)."""
    pre = MODELS.build(dict(type='BatchAugmentPreprocessor',
                            views=MSN_VIEWS, mean=[0.0] * 3,
                            std=[1.0] * 3))
    levels = [30, 60, 90, 120]  # x 1.4 (brightness) stays below 255
    views = pre(_padded_batch(levels), True)['inputs']
    assert [tuple(v.shape) for v in views] == \
        [(4, 3, 32, 32)] * 2 + [(4, 3, 16, 16)] * 10
    for view in views:
        for i, level in enumerate(levels):
            values = view[i]
            # brightness/contrast of a flat image stay flat; never 255
            assert float(values.max() - values.min()) < 1e-3
            assert float(values.max()) < 254.0
    # without colour changes every view holds exactly its image's level
    plain = MODELS.build(dict(
        type='BatchAugmentPreprocessor', mean=[0.0] * 3, std=[1.0] * 3,
        views=[dict(num_views=3, size=8, scale=(0.05, 1.0))]))
    for view in plain(_padded_batch(levels), True)['inputs']:
        for i, level in enumerate(levels):
            torch.testing.assert_close(view[i], torch.full_like(
                view[i], float(level)))
