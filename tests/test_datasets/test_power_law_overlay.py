"""PowerLawOverlayDataset: distributions, determinism, labels, errors."""
import os.path as osp
import pickle

import mmcv
import numpy as np
import pytest
from mmpretrain.registry import DATASETS
from scipy import stats
from sklearn.datasets import load_digits

from pmsn_mm.datasets import PowerLawOverlayDataset

N = 4000


@pytest.fixture(scope='module')
def train_set():
    return PowerLawOverlayDataset(num_samples=N, tau=0.5, seed=3)


def test_digit_frequencies_follow_power_law(train_set):
    counts = np.bincount(train_set.get_digit_labels(), minlength=10)
    ranks = np.arange(1, 11, dtype=np.float64)
    expected = ranks**-0.5 / np.sum(ranks**-0.5) * N
    assert stats.chisquare(counts, expected).pvalue > 0.01
    # the test has power: a uniform or a steeper law is rejected
    assert stats.chisquare(counts, np.full(10, N / 10)).pvalue < 1e-6
    steeper = ranks**-1.0 / np.sum(ranks**-1.0) * N
    assert stats.chisquare(counts, steeper).pvalue < 1e-6


def test_backgrounds_are_uniform(train_set):
    counts = np.bincount(train_set.get_background_labels(), minlength=10)
    assert len(counts) == 10
    assert stats.chisquare(counts, np.full(10, N / 10)).pvalue > 0.01


def test_tau_zero_gives_uniform_digits():
    ds = PowerLawOverlayDataset(num_samples=N, tau=0.0, seed=1)
    counts = np.bincount(ds.get_digit_labels(), minlength=10)
    assert stats.chisquare(counts, np.full(10, N / 10)).pvalue > 0.01


def test_pasted_digit_is_a_digit_of_its_class(train_set):
    """The top-left patch equals a resized scikit-learn digit of its label."""
    digits = load_digits()
    s = train_set.digit_size
    templates = np.stack([
        mmcv.imresize(
            np.clip(img * (255.0 / 16.0), 0, 255).astype(np.uint8), (s, s),
            interpolation='bilinear') for img in digits.images
    ]).reshape(len(digits.images), -1).astype(np.int64)
    for i in range(0, 200, 7):
        info = train_set.get_data_info(i)
        patch = info['img'][:s, :s, 0].reshape(-1).astype(np.int64)
        match = np.flatnonzero(np.all(templates == patch, axis=1))
        assert len(match) >= 1
        assert set(digits.target[match]) == {info['digit_label']}


def test_both_labels_and_image_format(train_set):
    info = train_set[5]
    assert info['img'].shape == (32, 32, 3) and info['img'].dtype == np.uint8
    assert np.array_equal(info['img'][..., 0], info['img'][..., 2])
    assert info['gt_label'] == info['digit_label']
    assert 0 <= info['background_label'] < 10
    bg = PowerLawOverlayDataset(num_samples=50, label='background', seed=3)
    assert np.array_equal(bg.get_gt_labels(), bg.get_background_labels())
    assert bg.metainfo['classes'][0] == 'astronaut'
    assert train_set.metainfo['classes'] == tuple(str(d) for d in range(10))
    one = PowerLawOverlayDataset(num_samples=5, channels=1, image_size=20,
                                 digit_size=8)
    assert one[0]['img'].shape == (20, 20, 1)


def test_same_seed_same_images_other_seed_differs():
    a = PowerLawOverlayDataset(num_samples=64, seed=7)
    b = PowerLawOverlayDataset(num_samples=64, seed=7)
    c = PowerLawOverlayDataset(num_samples=64, seed=8)
    imgs = [np.stack([d.get_data_info(i)['img'] for i in range(64)])
            for d in (a, b, c)]
    assert np.array_equal(imgs[0], imgs[1])
    assert np.array_equal(a.get_digit_labels(), b.get_digit_labels())
    assert not np.array_equal(imgs[0], imgs[2])


def test_train_and_test_digits_are_disjoint():
    """Offline split: no scikit-learn digit image is shared by the splits."""
    tr = PowerLawOverlayDataset(split='train', num_samples=10)
    te = PowerLawOverlayDataset(split='test', num_samples=10)
    tr_imgs, tr_lab = tr._load_digits()
    te_imgs, te_lab = te._load_digits()
    assert len(tr_imgs) + len(te_imgs) == 1797
    tr_set = {img.tobytes() + bytes([lab])
              for img, lab in zip(tr_imgs, tr_lab)}
    shared = sum(img.tobytes() + bytes([lab]) in tr_set
                 for img, lab in zip(te_imgs, te_lab))
    assert shared == 0
    assert te.test_mode and not tr.test_mode


def test_registered_and_pipeline():
    ds = DATASETS.build(
        dict(
            type='PowerLawOverlayDataset',
            num_samples=8,
            pipeline=[
                dict(
                    type='PackInputs',
                    meta_keys=('digit_label', 'background_label'))
            ]))
    out = ds[0]
    assert tuple(out['inputs'].shape) == (3, 32, 32)
    sample = out['data_samples']
    assert sample.digit_label == sample.gt_label.item()
    assert 'background_label' in sample


@pytest.mark.parametrize('kwargs, name', [
    (dict(tau=-0.1), 'tau'),
    (dict(tau=float('nan')), 'tau'),
    (dict(background_source='imagenet'), 'background_source'),
    (dict(digit_source='emnist'), 'digit_source'),
    (dict(image_size=8, digit_size=12), 'image_size'),
    (dict(digit_size=0), 'digit_size'),
    (dict(label='shape'), 'label'),
    (dict(split='val'), 'split'),
    (dict(num_samples=0), 'num_samples'),
    (dict(channels=2), 'channels'),
])
def test_bad_parameters_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PowerLawOverlayDataset(**kwargs)


def test_missing_real_files_name_the_expected_path(tmp_path):
    with pytest.raises(FileNotFoundError, match='cifar-10-batches-py'):
        PowerLawOverlayDataset(
            background_source='cifar10', background_root=str(tmp_path))
    with pytest.raises(FileNotFoundError, match='train-images-idx3-ubyte'):
        PowerLawOverlayDataset(
            num_samples=10, digit_source='mnist', digit_root=str(tmp_path))


def _write_fake_mnist(root, split, n=60):
    """idx files in MNIST's format; digit d is an image filled with 20*d+5."""
    prefix = 'train' if split == 'train' else 't10k'
    labels = np.arange(n, dtype=np.uint8) % 10
    images = np.repeat(labels[:, None, None] * 20 + 5, 28 * 28).reshape(
        n, 28, 28).astype(np.uint8)
    with open(osp.join(root, f'{prefix}-images-idx3-ubyte'), 'wb') as f:
        f.write(np.array([2051, n, 28, 28], dtype='>i4').tobytes())
        f.write(images.tobytes())
    with open(osp.join(root, f'{prefix}-labels-idx1-ubyte'), 'wb') as f:
        f.write(np.array([2049, n], dtype='>i4').tobytes())
        f.write(labels.tobytes())


def _write_fake_cifar(root, n_per_batch=20):
    """CIFAR-10 python batches; class c is an image filled with 10*c+100."""
    folder = osp.join(root, 'cifar-10-batches-py')
    import os
    os.makedirs(folder)
    names = [f'data_batch_{i}' for i in range(1, 6)] + ['test_batch']
    for b, name in enumerate(names):
        labels = [(b + i) % 10 for i in range(n_per_batch)]
        data = np.repeat(
            np.array(labels, dtype=np.uint8)[:, None] * 10 + 100,
            3 * 32 * 32,
            axis=1)
        with open(osp.join(folder, name), 'wb') as f:
            pickle.dump({'data': data, 'labels': labels}, f)
    with open(osp.join(folder, 'batches.meta'), 'wb') as f:
        pickle.dump({'label_names': [f'class{c}' for c in range(10)]}, f)


def test_real_sources_compose_cifar_and_mnist(tmp_path):
    """Copies of the CIFAR-10 batches are read (no official MD5 needed)."""
    from mmpretrain.datasets import CIFAR10
    _write_fake_mnist(str(tmp_path), 'train')
    _write_fake_mnist(str(tmp_path), 'test')
    _write_fake_cifar(str(tmp_path))
    ds = PowerLawOverlayDataset(
        num_samples=90,
        background_source='cifar10',
        background_root=str(tmp_path),
        digit_source='mnist',
        digit_root=str(tmp_path),
        image_size=32,
        digit_size=10,
        label='background')
    assert len(ds) == 90
    assert ds.metainfo['classes'] == tuple(CIFAR10.METAINFO['classes'])
    for i in range(90):
        info = ds.get_data_info(i)
        img = info['img'][..., 0]
        # background pixel = 10 * class + 100 (gray of a gray image)
        assert img[-1, -1] == 10 * info['background_label'] + 100
        # digit patch = 20 * digit + 5
        assert np.all(img[:10, :10] == 20 * info['digit_label'] + 5)
        assert info['gt_label'] == info['background_label']
    with pytest.raises(ValueError, match='num_samples'):
        PowerLawOverlayDataset(
            num_samples=500,
            background_source='cifar10',
            background_root=str(tmp_path))
