"""Procedural shape backgrounds of the offline toy set."""
import numpy as np
import pytest
from scipy import stats

from pmsn_mm.datasets import PowerLawOverlayDataset
from pmsn_mm.datasets.procedural_shapes import (SHAPE_CLASSES, STANDARD_MEAN,
                                                STANDARD_STD, render_shapes)


def test_render_is_deterministic_and_standardised():
    labels = np.arange(200) % 10
    a = render_shapes(labels, 20, np.random.default_rng(5))
    b = render_shapes(labels, 20, np.random.default_rng(5))
    c = render_shapes(labels, 20, np.random.default_rng(6))
    assert a.shape == (200, 20, 20) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # every image has the same mean and std (up to rounding and clipping)
    flat = a.reshape(200, -1).astype(np.float64)
    np.testing.assert_allclose(flat.mean(1), STANDARD_MEAN, atol=2.0)
    # clipping to [0, 255] can only shrink the spread a little
    assert (flat.std(1) <= STANDARD_STD + 0.5).all()
    assert (flat.std(1) >= STANDARD_STD - 6.0).all()


def test_class_is_not_in_global_statistics():
    """Mean grey level does not tell the class (one-way ANOVA)."""
    labels = np.arange(2000) % 10
    imgs = render_shapes(labels, 20, np.random.default_rng(0))
    means = imgs.reshape(len(imgs), -1).mean(1)
    groups = [means[labels == k] for k in range(10)]
    # standardised: per-class spread of the means is rounding-level
    assert max(g.mean() for g in groups) - min(
        g.mean() for g in groups) < 1.0


def test_shapes_differ_by_class():
    """Noise-free masks: the average object silhouettes of two classes are
    different (a disk and a ring differ in the centre)."""
    n = 400
    disk = render_shapes(np.zeros(n, int), 20, np.random.default_rng(1))
    ring = render_shapes(np.full(n, 3), 20, np.random.default_rng(1))
    # same rng => same positions/sizes/noise: only the shape differs
    diff = np.abs(disk.astype(float) - ring.astype(float)).mean(axis=(1, 2))
    assert (diff > 1.0).mean() > 0.95


def test_bad_labels_raise():
    with pytest.raises(ValueError, match='shape labels'):
        render_shapes(np.array([0, 10]), 20, np.random.default_rng(0))


def test_dataset_shapes_source_labels_and_power_law():
    n = 3000
    ds = PowerLawOverlayDataset(
        num_samples=n, image_size=20, digit_size=8, background_source='shapes',
        channels=1, seed=2)
    assert ds.background_classes == SHAPE_CLASSES
    bg = ds.get_background_labels()
    assert stats.chisquare(np.bincount(bg, minlength=10),
                           np.full(10, n / 10)).pvalue > 0.01
    ranks = np.arange(1, 11, dtype=np.float64)
    expected = ranks**-0.5 / np.sum(ranks**-0.5) * n
    digits = np.bincount(ds.get_digit_labels(), minlength=10)
    assert stats.chisquare(digits, expected).pvalue > 0.01
    info = ds.get_data_info(0)
    assert info['img'].shape == (20, 20, 1)
    # the top-left digit box is pasted over the shape image
    same = PowerLawOverlayDataset(
        num_samples=n, image_size=20, digit_size=8, background_source='shapes',
        channels=1, seed=2)
    np.testing.assert_array_equal(ds._images, same._images)


def test_narrowed_variation_leaves_only_the_noise():
    """With size, position, orientation and contrast fixed, two objects of a
    class differ only by their noise: without noise they are identical, and
    two classes still differ (the class is then the only invariant)."""
    fixed = dict(radius_range=(0.3, 0.3), centre_range=(0.6, 0.6),
                 max_angle=0.0, contrast_range=(80.0, 80.0))
    labels = np.array([3, 3, 3, 7])
    quiet = render_shapes(labels, 20, np.random.default_rng(0), noise_std=1e-9,
                          **fixed)
    np.testing.assert_array_equal(quiet[0], quiet[1])
    np.testing.assert_array_equal(quiet[0], quiet[2])
    assert np.abs(quiet[0].astype(int) - quiet[3].astype(int)).max() > 50
    noisy = render_shapes(labels, 20, np.random.default_rng(0), **fixed)
    assert not np.array_equal(noisy[0], noisy[1])
    # the default rendering varies the object itself, not only the noise
    free = render_shapes(labels, 20, np.random.default_rng(0), noise_std=1e-9)
    assert not np.array_equal(free[0], free[1])


def test_centre_range_places_the_object():
    """Fixed centre: the object's bright pixels centre on it (a disk)."""
    imgs = render_shapes(np.zeros(50, dtype=int), 20, np.random.default_rng(1),
                         radius_range=(0.2, 0.2), centre_range=(0.7, 0.7),
                         max_angle=0.0, noise_std=1e-9)
    bright = imgs.astype(np.float64) > STANDARD_MEAN
    ys, xs = np.nonzero(bright[0])
    assert abs(xs.mean() + 0.5 - 14.0) < 0.3 and abs(ys.mean() + 0.5 -
                                                     14.0) < 0.3


@pytest.mark.parametrize('kwargs, match', [
    (dict(radius_range=(0.3, 0.2)), 'radius_range must be'),
    (dict(radius_range=(0.3, 0.6)), 'radius_range must be'),
    (dict(centre_range=(-0.1, 0.5)), 'centre_range must be'),
    (dict(max_angle=7.0), 'max_angle must be in'),
    (dict(contrast_range=(10.0, 5.0)), 'contrast_range must be'),
    (dict(noise_std=-1.0), r'noise_std must be in \[0, inf\)'),
    (dict(noise_std=0.0, contrast_range=(0.0, 10.0)),
     'cannot be standardised'),
])
def test_render_options_are_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        render_shapes(np.zeros(2, dtype=int), 20, np.random.default_rng(0),
                      **kwargs)


def test_dataset_shape_options_and_noise_background():
    kw = dict(split='train', num_samples=40, image_size=20, digit_size=10,
              background_source='shapes', channels=1, pipeline=[])
    fixed = PowerLawOverlayDataset(
        **kw, shape_options=dict(max_angle=0.0, centre_range=(0.6, 0.7)))
    default = PowerLawOverlayDataset(**kw)
    assert not np.array_equal(fixed._images, default._images)
    # same labels: the options change rendering only, not the label draw
    np.testing.assert_array_equal(fixed.get_background_labels(),
                                  default.get_background_labels())
    with pytest.raises(ValueError, match='unknown key.*valid keys: '
                       'radius_range, centre_range, max_angle'):
        PowerLawOverlayDataset(**kw, shape_options=dict(angle=0.0))
    noise = PowerLawOverlayDataset(**{**kw, 'background_source': 'noise'})
    assert noise.background_classes == ('noise', )
    assert set(noise.get_background_labels().tolist()) == {0}
    # outside the digit box there is only standardised noise: no object
    rest = noise._images[:, 10:, :].astype(np.float64)
    assert abs(rest.mean() - STANDARD_MEAN) < 3.0
    with pytest.raises(ValueError, match="only applies to background_source="
                       "'shapes'"):
        PowerLawOverlayDataset(**{**kw, 'background_source': 'noise'},
                               shape_options=dict(max_angle=0.0))


def _all_candidate_masks(label, u, v):
    """The masks by brute force: every class's shape tested on every image,
    then each image's own class picked."""
    r = np.sqrt(u**2 + v**2)
    phi = np.arctan2(v, u)
    disk = r < 1.0
    square = np.maximum(np.abs(u), np.abs(v)) < 0.8
    candidates = [
        disk, square, (v > -0.5) & (v < 1.0 - np.sqrt(3.0) * np.abs(u)),
        (r < 1.0) & (r > 0.6),
        ((np.abs(u) < 0.3) & (np.abs(v) < 1.0))
        | ((np.abs(v) < 0.3) & (np.abs(u) < 1.0)),
        (np.abs(u) < 1.0) & (np.abs(v) < 0.28),
        r < 0.55 + 0.45 * np.cos(5.0 * phi),
        disk & ((u - 0.45)**2 + v**2 > 0.75**2),
        disk & (np.sin(2.5 * np.pi * u) > 0),
        square & (np.sin(np.pi * u / 0.4) * np.sin(np.pi * v / 0.4) > 0),
    ]
    return np.stack(candidates)[label.reshape(-1), np.arange(len(label))]


def test_per_class_masks_equal_the_brute_force_masks():
    """Each image is tested against its own class only (10x less work);
    the masks are exactly those of testing every shape."""
    from pmsn_mm.datasets.procedural_shapes import _shape_masks
    rng = np.random.default_rng(0)
    label = rng.integers(0, len(SHAPE_CLASSES), size=(60, 1, 1))
    u, v = rng.uniform(-1.3, 1.3, size=(2, 60, 24, 24))
    # points on the edges where the comparisons flip
    u[:, 0, :3], v[:, 0, :3] = [1.0, 0.8, 0.6], 0.0
    got = _shape_masks(label, u, v)
    np.testing.assert_array_equal(got, _all_candidate_masks(label, u, v))
    assert 0.05 < got.mean() < 0.6  # not all empty / full
