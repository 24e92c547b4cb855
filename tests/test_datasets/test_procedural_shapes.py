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
