"""MSN's views drawn by ``BatchAugmentPreprocessor`` against the per-sample
pipeline, both built from one recipe row (issue 24, deliverable 5).

Each comparison draws >= 2,000 views per path from the same source image,
one whose pixels make a property of a view readable (coordinates for the
crop, a constant colour for the colour chain, checkerboards for the resize
filter and the blur), and compares the two samples with two-sample tests at
fixed seeds: a matching statistic keeps p > ``ALPHA``; the tests that swap
in a wrong parameter show that the same comparison rejects it (p <
``REJECT``).

The per-sample path (mmpretrain's transforms built through the registry,
as ``configs/_base_/datasets/imagenet_msn_per-sample.py`` does) hands over
uint8 images, so the colour statistics put the device's float views on the
same uint8 grid first. Known deviations, measured here rather than
loosened away:

- Resize filter: when a crop shrinks, the device (``roi_align``) aliases
  fine patterns more than PIL's antialiased bilinear (strict ``xfail``
  below, with its size); enlarging crops match.
- PIL rounds to uint8 after every step (truncating in ImageEnhance):
  brightness, contrast and saturation each leave the per-sample channels
  ~0.5 level lower on average than the device's, the four-step chain ~1.6
  (hue: no bias); GaussianBlur's six box passes move a checkerboard's
  amplitude by up to 6 levels (``ROUNDING``), and leave 4-px squares
  untouched for sigma below ~0.2. The statistics here are compared where
  this rounding does not decide them.
"""
import functools
import warnings
from typing import Callable, Dict, Sequence, Tuple

import numpy as np
import pytest
import torch
from mmengine.registry import DefaultScope
from mmpretrain.registry import MODELS, TRANSFORMS
from scipy import stats

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

Views = np.ndarray  # (n, S, S, 3) float32, RGB
Stats = Dict[str, np.ndarray]

N = 2000
#: A matching statistic keeps p above this in every comparison.
ALPHA = 1e-4
#: A wrong parameter must push the same comparison below this.
REJECT = 1e-8

#: Official MSN (facebookresearch/msn, src/data_manager.py make_transforms):
#: the colour distortion and crop ratio shared by both view groups.
MSN_ROW = dict(ratio=(3. / 4., 4. / 3.), flip_prob=0.5, jitter_prob=0.8,
               brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1,
               grayscale_prob=0.2, blur_prob=0.5, blur_sigma=(0.1, 2.0))
#: RandomResizedCrop(224, scale=(0.3, 1)) and the focal (96, (0.05, 0.3)).
RANDOM_VIEW = dict(MSN_ROW, size=224, scale=(0.3, 1.0))
FOCAL_VIEW = dict(MSN_ROW, size=96, scale=(0.05, 0.3))
GROUPS = {'random': RANDOM_VIEW, 'focal': FOCAL_VIEW}
PHOTOMETRIC_OFF = dict(jitter_prob=0.0, grayscale_prob=0.0, blur_prob=0.0)
NO_JITTER = dict(brightness=0.0, contrast=0.0, saturation=0.0, hue=0.0)


# ------------------------------------------------------ both paths, one row
def per_sample_pipeline(row: dict) -> list:
    """The per-sample transforms of one view (the per-sample config's
    ``random_view``/``focal_view``), parameters from ``row``."""
    return [
        dict(type='RandomResizedCrop', scale=row['size'],
             crop_ratio_range=row['scale'], aspect_ratio_range=row['ratio'],
             backend='pillow'),
        dict(type='RandomFlip', prob=row['flip_prob']),
        dict(type='RandomApply', prob=row['jitter_prob'], transforms=[
            dict(type='ModuloHueColorJitter', brightness=row['brightness'],
                 contrast=row['contrast'], saturation=row['saturation'],
                 hue=row['hue'])]),
        dict(type='RandomGrayscale', prob=row['grayscale_prob'],
             keep_channels=True, channel_weights=(0.114, 0.587, 0.2989)),
        dict(type='GaussianBlur', magnitude_range=row['blur_sigma'],
             magnitude_std='inf', prob=row['blur_prob']),
    ]


def per_sample_views(row: dict, rgb: np.ndarray, num: int, seed: int,
                     stat: Callable[[Views], Stats],
                     chunk: int = 500) -> Stats:
    """``stat`` of ``num`` views of ``rgb`` (H, W, 3 uint8) drawn by
    ``MultiView`` over :func:`per_sample_pipeline` (BGR in and out, as
    loaded by mmcv; returned RGB)."""
    with DefaultScope.overwrite_default_scope('mmpretrain'):
        multi = TRANSFORMS.build(dict(type='MultiView', num_views=chunk,
                                      transforms=[per_sample_pipeline(row)]))
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    np.random.seed(seed)
    parts = []
    for _ in range(num // chunk):
        with warnings.catch_warnings():  # mmcv's adjust_color, every call
            warnings.simplefilter('ignore', UserWarning)
            views = multi(dict(img=bgr, img_shape=bgr.shape[:2]))['img']
        parts.append(stat(np.stack(views)[..., ::-1].astype(np.float32)))
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def device_views(row: dict, rgb: np.ndarray, num: int, seed: int,
                 stat: Callable[[Views], Stats],
                 chunk: int = 500) -> Stats:
    """``stat`` of ``num`` views of ``rgb`` drawn by a
    ``BatchAugmentPreprocessor`` with the one view group ``row`` (BGR uint8
    in, ``to_rgb``, no normalisation)."""
    pre = MODELS.build(dict(
        type='BatchAugmentPreprocessor', views=[dict(row, num_views=chunk)],
        mean=[0.0] * 3, std=[1.0] * 3, to_rgb=True, seed=seed))
    bgr = torch.from_numpy(np.ascontiguousarray(rgb[..., ::-1]))
    data = dict(inputs=bgr.permute(2, 0, 1)[None], data_samples=None)
    parts = []
    for _ in range(num // chunk):
        views = torch.cat(pre(data, True)['inputs'])
        parts.append(stat(views.permute(0, 2, 3, 1).numpy()))
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def ks_pvalues(ref: Stats, dev: Stats,
               keys: Sequence[str]) -> Dict[str, float]:
    """Two-sample Kolmogorov-Smirnov p-value of each statistic."""
    return {k: float(stats.ks_2samp(ref[k], dev[k]).pvalue) for k in keys}


def rate_pvalue(ref: np.ndarray, dev: np.ndarray) -> float:
    """Chi-square test of equal rates of two boolean samples."""
    table = [[ref.sum(), (~ref).sum()], [dev.sum(), (~dev).sum()]]
    return float(stats.chi2_contingency(table).pvalue)


# --------------------------------------------------------------- geometry
GEOMETRY_HW = (180, 240)  # 4:3 landscape: some tries of tall boxes fail


def coordinate_image(height: int, width: int) -> np.ndarray:
    """R = x, G = y, B = 128: a view's pixels show where they came from."""
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x, y, np.full_like(x, 128)], -1).astype(np.uint8)


def box_readout(views: Views, height: int, width: int) -> Stats:
    """Crop box of each view of :func:`coordinate_image`, from a line fitted
    to the row-mean of R along x and the column-mean of G along y (the two
    outermost pixels left out: there the filters see the crop's border).

    Returns:
        ``area`` (fraction of the image), ``aspect`` (w / h), ``cx``, ``cy``
        (centre as a fraction of the side) and ``flip`` (bool).
    """
    size = views.shape[1]
    pos = np.arange(2, size - 2, dtype=np.float64)
    centred = pos - pos.mean()
    xs = views[:, :, 2:-2, 0].mean(axis=1)
    ys = views[:, 2:-2, :, 1].mean(axis=2)
    slope_x = xs @ centred / (centred @ centred)
    slope_y = ys @ centred / (centred @ centred)
    # pixel value v is centred at v + 0.5; view pixel j at (j + 0.5) w / S
    mid = (size - 1) / 2 - pos.mean()
    cx = xs.mean(axis=1) + slope_x * mid + 0.5
    cy = ys.mean(axis=1) + slope_y * mid + 0.5
    w, h = np.abs(slope_x) * size, np.abs(slope_y) * size
    return dict(area=w * h / (height * width), aspect=w / h, cx=cx / width,
                cy=cy / height, flip=slope_x < 0)


def geometry_row(group: str, **override) -> dict:
    """Crop and flip of a group at 32 px, photometric ops off (the crop's
    distribution does not depend on the output size)."""
    return dict(GROUPS[group], size=32, **PHOTOMETRIC_OFF, **override)


@pytest.fixture(scope='module')
def geometry() -> Dict[str, Stats]:
    """Per-sample reference draws of both groups."""
    rgb = coordinate_image(*GEOMETRY_HW)
    return {g: per_sample_views(geometry_row(g), rgb, N, seed, _box_stat)
            for seed, g in enumerate(GROUPS)}


def _box_stat(views: Views) -> Stats:
    return box_readout(views, *GEOMETRY_HW)


def test_box_readout_recovers_known_boxes():
    """The instrument: boxes cropped and resized by PIL (the per-sample
    path's mmcv.imcrop + imresize) and by roi_align are read back to within
    1 % of the side and 0.5 px of the centre."""
    import mmcv

    from tests._views import crop_boxes_out
    height, width = GEOMETRY_HW
    rgb = coordinate_image(height, width)
    rng = np.random.default_rng(0)
    boxes = []
    for _ in range(20):
        h, w = rng.integers(40, height + 1), rng.integers(40, width + 1)
        boxes.append((rng.integers(0, height - h + 1),
                      rng.integers(0, width - w + 1), h, w))
    boxes = np.array(boxes)
    pil = np.stack([
        mmcv.imresize(rgb[t:t + h, x:x + w], (32, 32), backend='pillow')
        for t, x, h, w in boxes]).astype(np.float64)
    flip = torch.arange(20) % 2 == 1
    device = crop_boxes_out(
        torch.from_numpy(rgb).permute(2, 0, 1).float()[None],
        torch.from_numpy(boxes), (32, 32), flip,
        torch.zeros(20, dtype=torch.long)).permute(0, 2, 3, 1).double()
    top, left, h, w = boxes.T.astype(np.float64)
    for views, flipped in ((pil, np.zeros(20, bool)),
                           (device.numpy(), flip.numpy())):
        got = box_readout(views, height, width)
        np.testing.assert_allclose(np.sqrt(got['area'] * height * width),
                                   np.sqrt(h * w), rtol=0.01)
        np.testing.assert_allclose(got['aspect'], w / h, rtol=0.02)
        np.testing.assert_allclose(got['cx'] * width, left + w / 2, atol=0.5)
        np.testing.assert_allclose(got['cy'] * height, top + h / 2, atol=0.5)
        np.testing.assert_array_equal(got['flip'], flipped)


@pytest.mark.parametrize('group', list(GROUPS))
def test_crop_area_aspect_centre_and_flip_match(group, geometry):
    """Area fraction, aspect ratio and centre (KS) and the flip rate
    (chi-square, and binomial against 0.5) of both paths; every area within
    the recipe's scale range up to the readout's error."""
    ref = geometry[group]
    dev = device_views(geometry_row(group), coordinate_image(*GEOMETRY_HW),
                       N, 100 + list(GROUPS).index(group), _box_stat)
    pvalues = ks_pvalues(ref, dev, ('area', 'aspect', 'cx', 'cy'))
    pvalues['flip'] = rate_pvalue(ref['flip'], dev['flip'])
    assert min(pvalues.values()) > ALPHA, pvalues
    low, high = GROUPS[group]['scale']
    for sample in (ref, dev):
        assert stats.binomtest(int(sample['flip'].sum()), N,
                               0.5).pvalue > ALPHA
        assert low * 0.97 < sample['area'].min()
        assert sample['area'].max() < high * 1.03


def test_a_wrong_crop_scale_is_caught(geometry):
    """scale=(0.2, 1) on the device against the recipe's (0.3, 1)."""
    dev = device_views(geometry_row('random', scale=(0.2, 1.0)),
                       coordinate_image(*GEOMETRY_HW), N, 100, _box_stat)
    assert ks_pvalues(geometry['random'], dev, ('area', ))['area'] < REJECT


# ----------------------------------------------------------------- colour
#: Saturated colours: every channel is >= 48 levels from the colour's grey
#: value, so contrast and saturation move each channel over a range far
#: wider than the uint8 rounding of the per-sample path.
COLOURS = ((220, 40, 40), (40, 200, 40), (200, 40, 200), (40, 200, 200))
#: Statistics each op moves continuously (where an op keeps a statistic
#: fixed, only the paths' rounding is left to compare: brightness keeps the
#: HSV saturation; hue keeps the largest and the smallest channel).
FACTOR_STATS = {'brightness': ('R', 'G', 'B'),
                'contrast': ('R', 'G', 'B', 'chroma'),
                'saturation': ('R', 'G', 'B', 'chroma', 'saturation'),
                'hue': ('hue', )}
CHAIN_STATS = ('chroma', 'saturation', 'hue')


def constant_image(colour: Tuple[int, int, int]) -> np.ndarray:
    """An 8 x 8 image of one colour."""
    return np.broadcast_to(np.array(colour, np.uint8), (8, 8, 3)).copy()


def hsv_hue(rgb: np.ndarray) -> np.ndarray:
    """HSV hue in turns of (..., 3) RGB (NaN where grey)."""
    r, g, b = np.moveaxis(rgb.astype(np.float64), -1, 0)
    high, low = rgb.max(axis=-1), rgb.min(axis=-1)
    chroma = np.where(high > low, high - low, np.nan)
    hue = np.where(high == r, ((g - b) / chroma) % 6,
                   np.where(high == g, (b - r) / chroma + 2,
                            (r - g) / chroma + 4))
    return hue / 6


def colour_stat(colour: Tuple[int, int, int]) -> Callable[[Views], Stats]:
    """Statistics of flat views of ``colour``, on the uint8 grid: channel
    values, chroma (max - min), HSV saturation, hue shift in turns (NaN
    for grey views, dropped) and whether a view is grey."""
    hue0 = hsv_hue(np.array(colour))

    def stat(views: Views) -> Stats:
        rgb = np.round(views.mean(axis=(1, 2)))
        high = rgb.max(axis=1)
        chroma = high - rgb.min(axis=1)
        shift = (hsv_hue(rgb) - hue0 + 0.5) % 1 - 0.5
        return dict(R=rgb[:, 0], G=rgb[:, 1], B=rgb[:, 2], chroma=chroma,
                    saturation=chroma / np.maximum(high, 1), hue=shift,
                    grey=chroma == 0, flat=np.ptp(views, axis=(1, 2)).max(1))

    return stat


def colour_row(**override) -> dict:
    """The recipe's photometric ops on flat 8 px views (crop of the whole
    image: scale (1, 1) falls back to the central full box in both paths)."""
    return dict(MSN_ROW, size=8, scale=(1.0, 1.0), **override)


def factor_row(factor: str, strength: float = None) -> dict:
    """Colour jitter with one factor at the recipe's strength, others off."""
    value = MSN_ROW[factor] if strength is None else strength
    return colour_row(grayscale_prob=0.0, blur_prob=0.0,
                      **dict(NO_JITTER, **{factor: value}))


def spread_pvalue(ref: Stats, dev: Stats) -> float:
    """Levene (Brown-Forsythe) test of equal spread of the log HSV
    saturation of the colour views: in the chain, a saturation factor drawn
    from a narrower range shows as a narrower spread."""
    return float(stats.levene(np.log(ref['saturation'][~ref['grey']]),
                              np.log(dev['saturation'][~dev['grey']])).pvalue)


@functools.lru_cache(maxsize=None)
def _per_sample_colours(row_items: tuple, colour: Tuple[int, int, int],
                        seed: int) -> Stats:
    """Per-sample draws of a colour, kept for the tests that reuse them."""
    return per_sample_views(dict(row_items), constant_image(colour), N, seed,
                            colour_stat(colour))


def compare_colours(ref_row: dict, dev_row: dict, keys: Sequence[str],
                    seed: int) -> Tuple[Dict[str, float], list]:
    """KS p-values of ``keys`` per colour (``'{colour} {key}'``), and the
    per-colour pairs of statistics."""
    pvalues, samples = {}, []
    for i, colour in enumerate(COLOURS):
        ref = _per_sample_colours(tuple(sorted(ref_row.items())), colour,
                                  seed + i)
        dev = device_views(dev_row, constant_image(colour), N, seed + 50 + i,
                           colour_stat(colour))
        for key in keys:
            a, b = ref[key], dev[key]
            pvalues[f'{colour} {key}'] = float(stats.ks_2samp(
                a[~np.isnan(a)], b[~np.isnan(b)]).pvalue)
        samples.append((ref, dev))
    return pvalues, samples


@pytest.mark.parametrize('factor', list(FACTOR_STATS))
def test_each_colour_jitter_factor_matches(factor):
    """One factor of ColorJitter at a time (RandomApply p = 0.8): the
    output colours of both paths on four constant colours; views stay flat
    in both."""
    row = factor_row(factor)
    pvalues, samples = compare_colours(row, row, FACTOR_STATS[factor], 1000)
    assert min(pvalues.values()) > ALPHA, pvalues
    for ref, dev in samples:
        assert ref['flat'].max() == 0 and dev['flat'].max() < 1e-3


def test_the_whole_colour_chain_matches():
    """All four factors in a random order (p = 0.8), grayscale (p = 0.2)
    and blur (p = 0.5, no effect on a flat image): chroma, HSV saturation
    and hue shift (KS), the spread of the saturation (Levene); the grey
    rate between paths (chi-square) and against the recipe's 0.2
    (binomial). The channel values themselves are compared factor by
    factor above: along the chain, PIL's truncation to uint8 after each
    step lowers the per-sample channels by ~0.5 level a step (see the
    module's notes), which the statistics here are blind to."""
    row = colour_row()
    pvalues, samples = compare_colours(row, row, CHAIN_STATS, 2000)
    for colour, (ref, dev) in zip(COLOURS, samples):
        pvalues[f'{colour} saturation spread'] = spread_pvalue(ref, dev)
        pvalues[f'{colour} grey rate'] = rate_pvalue(ref['grey'], dev['grey'])
        for path, sample in (('per-sample', ref), ('device', dev)):
            pvalues[f'{colour} {path} grey vs 0.2'] = stats.binomtest(
                int(sample['grey'].sum()), N, 0.2).pvalue
    assert min(pvalues.values()) > ALPHA, pvalues


def test_grayscale_alone_matches():
    """RandomGrayscale alone: rate (chi-square, binomial against 0.2) and
    grey level (ITU-R 601 luma; mmpretrain truncates it to uint8, so
    within one level)."""
    row = colour_row(jitter_prob=0.0, blur_prob=0.0)
    for i, colour in enumerate(COLOURS):
        rgb, stat = constant_image(colour), colour_stat(colour)
        ref = per_sample_views(row, rgb, N, 3000 + i, stat)
        dev = device_views(row, rgb, N, 3050 + i, stat)
        assert rate_pvalue(ref['grey'], dev['grey']) > ALPHA
        for sample in (ref, dev):
            assert stats.binomtest(int(sample['grey'].sum()), N,
                                   0.2).pvalue > ALPHA
        luma = np.dot(colour, (0.299, 0.587, 0.114))
        assert np.all(np.abs(ref['G'][ref['grey']] - luma) <= 1.0)
        assert np.all(np.abs(dev['G'][dev['grey']] - luma) <= 1.0)


def test_a_wrong_saturation_is_caught():
    """saturation=0.2 on the device against the recipe's 0.4: rejected by
    the saturation comparison, and by the whole chain's spread of HSV
    saturation (Fisher's combination over the four colours)."""
    alone, _ = compare_colours(factor_row('saturation'),
                               factor_row('saturation', 0.2),
                               FACTOR_STATS['saturation'], 1000)
    assert max(alone.values()) < REJECT, alone
    _, samples = compare_colours(colour_row(), colour_row(saturation=0.2),
                                 (), 2000)
    chain = [spread_pvalue(ref, dev) for ref, dev in samples]
    combined = stats.combine_pvalues(chain, method='fisher')
    assert combined.pvalue < REJECT, chain


# ------------------------------- official MSN's ColorJitter (torchvision)
#: Views per path of the comparison with official MSN's jitter.
N_OFFICIAL = 32768
#: Largest |difference| of a channel's mean (in [0, 1]) between the paths:
#: ~4 standard errors of the difference at ``N_OFFICIAL`` views (a jittered
#: saturated red's channel has a standard deviation of ~0.17). Rotating
#: the hue continuously instead of on PIL's 8-bit circle raised the blue
#: mean of a saturated red by 0.016-0.020 (hue alone) and 0.013-0.014 (all
#: four).
OFFICIAL_TOLERANCE = 0.0075
SATURATED_RED = (255, 0, 0)


def official_jitter_means(row: dict, rgb: np.ndarray, num: int,
                          seed: int) -> np.ndarray:
    """Channel means (in [0, 1]) of ``num`` flat views of ``rgb`` through
    official MSN's colour jitter: torchvision's ``RandomApply(
    [ColorJitter(b, c, s, h)], p)`` on a PIL image
    (facebookresearch/msn ``src/data_manager.py``,
    ``get_color_distortion``), seeded through torch's RNG as there."""
    import torchvision.transforms as T
    from PIL import Image
    jitter = T.RandomApply([
        T.ColorJitter(row['brightness'], row['contrast'], row['saturation'],
                      row['hue'])
    ], p=row['jitter_prob'])
    image = Image.fromarray(rgb)
    torch.manual_seed(seed)
    return np.stack([
        np.asarray(jitter(image), dtype=np.float64).mean(axis=(0, 1))
        for _ in range(num)
    ]) / 255.0


def _channel_means(views: Views) -> Stats:
    means = views.mean(axis=(1, 2)) / 255.0
    return dict(R=means[:, 0], G=means[:, 1], B=means[:, 2])


@pytest.mark.parametrize('strengths', [
    dict(NO_JITTER, hue=MSN_ROW['hue']),
    {k: MSN_ROW[k] for k in NO_JITTER},
])
def test_focal_jitter_of_a_saturated_red_matches_official_msn(strengths):
    """The focal group's colour jitter (p = 0.8; the hue alone, then all
    four factors) of a saturated red against official MSN's per-sample
    chain (torchvision on PIL): every channel's mean within
    ``OFFICIAL_TOLERANCE``. With the hue alone, both paths' blue lies on
    PIL's grid of hue steps (6 levels each) and below its largest value,
    24 steps (a rotation of at most 0.1 turn = 25.5 steps, truncated to 25,
    then the step a red loses when turned below 0 in uint8). Caught the hue
    rotated continuously instead of on PIL's 8-bit circle."""
    row = dict(colour_row(grayscale_prob=0.0, blur_prob=0.0, **strengths),
               size=4)
    rgb = np.broadcast_to(np.array(SATURATED_RED, np.uint8),
                          (4, 4, 3)).copy()
    ref = official_jitter_means(row, rgb, N_OFFICIAL, 6000)
    dev = device_views(row, rgb, N_OFFICIAL, 6050, _channel_means,
                       chunk=4096)
    gaps = {k: abs(ref[:, i].mean() - dev[k].mean())
            for i, k in enumerate('RGB')}
    assert max(gaps.values()) < OFFICIAL_TOLERANCE, gaps
    if strengths['contrast'] == 0:  # the hue alone
        for blue in (ref[:, 2], dev['B']):
            steps = blue * 255.0 / 6.0
            assert np.abs(steps - np.round(steps)).max() < 1e-3
            assert steps.max() < 24.0 + 1e-3


# ------------------------------------------------------- resize and blur
LOW, HIGH = 40, 215  # checkerboard levels


def checkerboard(height: int, width: int, square: int) -> np.ndarray:
    """Grey checkerboard of ``square``-pixel squares."""
    y, x = np.mgrid[0:height, 0:width]
    grey = np.where((y // square + x // square) % 2 == 0, LOW, HIGH)
    return np.repeat(grey[..., None], 3, axis=-1).astype(np.uint8)


def sharpness(views: Views) -> Stats:
    """Mean absolute difference of neighbouring pixels (both axes) as a
    fraction of the checkerboard's contrast."""
    grey = views[..., 0]
    diff = (np.abs(np.diff(grey, axis=1)).mean(axis=(1, 2)) +
            np.abs(np.diff(grey, axis=2)).mean(axis=(1, 2))) / 2
    return dict(sharpness=diff / (HIGH - LOW))


#: 128 x 176: the largest crop of either group is no larger than its output
#: (random: 176 <= 224 px; focal: sqrt(0.3 * 128 * 176 * 4 / 3) = 95 <= 96),
#: so every view is enlarged and both paths resize with the plain bilinear
#: filter.
ENLARGED_HW = (128, 176)
#: ImageNet's typical size: every random view and most focal views shrink.
SHRUNK_HW = (375, 500)


@pytest.mark.parametrize('group', list(GROUPS))
def test_checkerboard_sharpness_after_an_enlarging_resize_matches(group):
    """Crop + resize to the real 224 / 96 px with blur off, of a 2-px
    checkerboard: the sharpness of both paths' views (KS)."""
    row = dict(GROUPS[group], **PHOTOMETRIC_OFF)
    rgb = checkerboard(*ENLARGED_HW, 2)
    ref = per_sample_views(row, rgb, N, 4000, sharpness, chunk=250)
    dev = device_views(row, rgb, N, 4050, sharpness, chunk=250)
    assert ks_pvalues(ref, dev, ('sharpness', ))['sharpness'] > ALPHA


@pytest.mark.xfail(strict=True, reason=(
    'documented deviation: when a crop shrinks, roi_align averages '
    'ceil(crop / out) bilinear samples per output pixel and axis, PIL '
    'filters with a triangle as wide as the shrink; see the docstring'))
def test_checkerboard_sharpness_after_a_shrinking_resize_matches():
    """Focal views of an ImageNet-sized 2-px checkerboard, shrunk by up to
    2.8 x. Measured with the crop's size read from coordinate ramps in the
    other channels, the device's mean sharpness is 0.91 x PIL's for shrinks
    up to 1.25 x, then higher (aliasing): 1.10 x for 1.25-1.5 x, 1.30 x for
    1.5-1.75 x, 1.56 x for 1.75-2 x and 2.2 x beyond (random views at 224
    px: 0.92, 1.10 and 1.28 x in the first three bins). Strict: once the
    device resizes as PIL does this passes, and the mark must go."""
    row = dict(FOCAL_VIEW, **PHOTOMETRIC_OFF)
    rgb = checkerboard(*SHRUNK_HW, 2)
    ref = per_sample_views(row, rgb, N, 4100, sharpness, chunk=250)
    dev = device_views(row, rgb, N, 4150, sharpness, chunk=250)
    assert ks_pvalues(ref, dev, ('sharpness', ))['sharpness'] > ALPHA


BLUR_SIDE = 64
#: Rows (and columns) read in each half of the blur's source image: 8 px
#: from every edge of the half (the widest blur reaches 6 px).
BLUR_READ = slice(8, 24)


def blur_source() -> np.ndarray:
    """Two checkerboards: 1-px squares on top (blurred away by sigma ~1),
    4-px squares below (still visible at sigma 2)."""
    out = checkerboard(BLUR_SIDE, BLUR_SIDE, 1)
    out[BLUR_SIDE // 2:] = checkerboard(BLUR_SIDE // 2, BLUR_SIDE, 4)
    return out


def checker_amplitude(views: Views) -> Stats:
    """Amplitude of each half's checkerboard left in a view (1: intact, 0:
    flat): the projection on the source's +-1 pattern (rounding noise
    averages out; a mirrored view projects to the negated pattern); and
    whether the view is blurred (fine amplitude below 0.995)."""
    src = blur_source()[..., 0].astype(np.float64)
    out = {}
    for name, rows in (('fine', BLUR_READ),
                       ('coarse', slice(BLUR_SIDE // 2 + BLUR_READ.start,
                                        BLUR_SIDE // 2 + BLUR_READ.stop))):
        cols = slice(BLUR_READ.start, BLUR_SIDE - BLUR_READ.start)
        sign = np.sign(src[rows, cols] - (LOW + HIGH) / 2)
        patch = views[:, rows, cols, 0]
        patch = patch - patch.mean(axis=(1, 2), keepdims=True)
        out[name] = np.abs((patch * sign).mean(axis=(1, 2))) * 2 / (HIGH - LOW)
    out['blurred'] = out['fine'] < 0.995
    return out


def blur_row(**override) -> dict:
    """Blur alone on the whole image (crop of scale 1 at the source size:
    both paths hand the image through unchanged), flips as the recipe."""
    return dict(MSN_ROW, size=BLUR_SIDE, scale=(1.0, 1.0), jitter_prob=0.0,
                grayscale_prob=0.0, **override)


#: PIL's GaussianBlur rounds to uint8 after each of its six box passes (3
#: per axis), each moving a checkerboard's amplitude by up to one level of
#: its 175: the float device path is exact, so amplitudes may differ by this.
ROUNDING = 6 / (HIGH - LOW)
#: Amplitudes outside this band are pooled for the two-sample test: near 1
#: (sigma < ~0.2) and near 0 (the fine squares for sigma > ~0.9) PIL's
#: rounding, not the kernel, decides the value.
BAND = (1.5 * ROUNDING, 1 - 3 * ROUNDING)


def test_blur_across_its_sigma_range_matches():
    """GaussianBlur(p = 0.5, sigma ~ U(0.1, 2)): the blurred rate
    (chi-square, binomial against 0.5) and, over the blurred views, the
    amplitude left in both halves (KS, pooled outside ``BAND``)."""
    rgb, row = blur_source(), blur_row()
    ref = per_sample_views(row, rgb, N, 5000, checker_amplitude)
    dev = device_views(row, rgb, N, 5050, checker_amplitude)
    pvalues = {'rate': rate_pvalue(ref['blurred'], dev['blurred'])}
    for path, sample in (('per-sample', ref), ('device', dev)):
        pvalues[f'{path} rate vs 0.5'] = stats.binomtest(
            int(sample['blurred'].sum()), N, 0.5).pvalue
        assert np.all(sample['fine'][~sample['blurred']] > 0.9999)
    for key in ('fine', 'coarse'):
        a, b = (np.clip(x[key][x['blurred']], *BAND) for x in (ref, dev))
        pvalues[key] = float(stats.ks_2samp(a, b).pvalue)
    assert min(pvalues.values()) > ALPHA, pvalues


BLUR_SIGMAS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


@pytest.fixture(scope='module')
def blur_per_sigma() -> Dict[float, Stats]:
    """Per-sample draws at each fixed sigma (300 views each, 2,100 in all)."""
    return {sigma: per_sample_views(blur_row(blur_sigma=(sigma, sigma)),
                                    blur_source(), 300, 5100 + i,
                                    checker_amplitude, chunk=300)
            for i, sigma in enumerate(BLUR_SIGMAS)}


def test_blur_per_sigma_matches(blur_per_sigma):
    """At each sigma of the range: the blurred rate (chi-square), and the
    amplitude left in both halves by the blur, the same in every blurred
    view of a path and between the paths (within PIL's ``ROUNDING``)."""
    for i, sigma in enumerate(BLUR_SIGMAS):
        ref = blur_per_sigma[sigma]
        dev = device_views(blur_row(blur_sigma=(sigma, sigma)), blur_source(),
                           300, 5150 + i, checker_amplitude, chunk=300)
        assert rate_pvalue(ref['blurred'], dev['blurred']) > ALPHA, sigma
        for key in ('fine', 'coarse'):
            a, b = ref[key][ref['blurred']], dev[key][dev['blurred']]
            assert np.ptp(a) <= ROUNDING and np.ptp(b) <= 1e-4
            assert abs(np.median(a) - np.median(b)) <= ROUNDING, (
                sigma, key, np.median(a), np.median(b))


def test_a_sampled_gaussian_kernel_is_caught(blur_per_sigma):
    """A sampled Gaussian of the same sigma (kornia's gaussian_blur2d, the
    device's kernel before) blurs the fine checkerboard far less than PIL
    for small sigma (its variance falls short of sigma ** 2): the per-sigma
    comparison rejects it."""
    from kornia.filters import gaussian_blur2d
    image = torch.from_numpy(blur_source()).permute(2, 0, 1).float()[None]
    misses = []
    for sigma in (0.1, 0.25):
        ref = blur_per_sigma[sigma]
        blurred = gaussian_blur2d(image, (13, 13), (sigma, sigma),
                                  border_type='replicate')
        fine = checker_amplitude(blurred.permute(0, 2, 3, 1).double().numpy())
        misses.append(abs(np.median(ref['fine'][ref['blurred']]) -
                          fine['fine'][0]))
    assert min(misses) > 2 * ROUNDING, misses
