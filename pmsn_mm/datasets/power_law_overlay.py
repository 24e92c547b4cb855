"""Toy dataset of paper §5.1 / Fig. 3: power-law digits on backgrounds."""
import os.path as osp
from typing import List, Optional, Sequence, Tuple, cast

import mmcv
import numpy as np
from mmpretrain.datasets import BaseDataset
from mmpretrain.registry import DATASETS

from ..utils.power_law import power_law_probs
from ..utils.validation import check_choice, check_int, check_number
from .non_empty import NonEmptyDatasetMixin
from .procedural_shapes import (SHAPE_CLASSES, SHAPE_OPTIONS, render_noise,
                                render_shapes)

#: scikit-image's 10 photographs: the offline ``'skimage'`` backgrounds.
SKIMAGE_PHOTOS = ('astronaut.png', 'brick.png', 'camera.png', 'chelsea.png',
                  'coffee.png', 'coins.png', 'grass.png', 'moon.png',
                  'motorcycle_left.png', 'rocket.jpg')
CIFAR10_FILES = {
    'train': [f'data_batch_{i}' for i in range(1, 6)] + ['batches.meta'],
    'test': ['test_batch', 'batches.meta'],
}
MNIST_FILES = {
    'train': ['train-images-idx3-ubyte', 'train-labels-idx1-ubyte'],
    'test': ['t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte'],
}
BACKGROUND_SOURCES = ('shapes', 'noise', 'skimage', 'cifar10')
DIGIT_SOURCES = ('sklearn', 'mnist')
LABELS = ('digit', 'background')
SPLITS = ('train', 'test')
#: Fraction of scikit-learn's 1,797 digits (per class) used by the train split;
#: the rest belong to the test split, so the two never share a digit image.
SKLEARN_TRAIN_FRACTION = 0.7
#: Side of an offline background crop, as a fraction of the photo's short side.
CROP_FRACTION = (0.25, 0.6)


def _to_gray_uint8(img: np.ndarray) -> np.ndarray:
    """RGB(A)/gray image of any dtype -> (H, W) uint8 luminance."""
    img = np.asarray(img)
    if img.ndim == 3:
        img = img[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    if img.dtype != np.uint8:
        img = np.asarray(img, dtype=np.float64)
        if img.max() <= 1.0:
            img = img * 255.0
        img = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return img


def _require_files(root: str, names: Sequence[str], what: str,
                   layout: str) -> None:
    missing = [osp.join(root, n) for n in names
               if not osp.isfile(osp.join(root, n))]
    if missing:
        raise FileNotFoundError(
            f'{what} files are missing: {missing}. Expected the standard '
            f'layout {layout} (no download at run time; place the files '
            'there or change data_root).')


def _read_split(dataset_cls: type, data_root: str, folder: str, split: str,
                files: Sequence[str], what: str, layout: str
                ) -> Tuple[List[np.ndarray], np.ndarray, Tuple[str, ...]]:
    """Grey uint8 images, labels and class names of one split of an
    mmpretrain dataset that is already on disk (MNIST, CIFAR10; never
    downloaded); missing files raise a FileNotFoundError naming them."""
    _require_files(folder, files, what, layout)
    dataset = dataset_cls(
        data_root=data_root, split=split, download=False, lazy_init=True)
    data = dataset.load_data_list()
    images = [_to_gray_uint8(d['img']) for d in data]
    labels = np.array([int(d['gt_label']) for d in data], dtype=np.int64)
    return images, labels, tuple(dataset.CLASSES)


@DATASETS.register_module()
class PowerLawOverlayDataset(NonEmptyDatasetMixin, BaseDataset):
    """Grayscale backgrounds with a power-law digit in the top-left corner.

    The toy set of paper §5.1 (Fig. 3; docs/data.md): a grayscale
    background, uniform over its classes, with a digit in the top-left
    ``digit_size`` corner, ``P(digit = d) ∝ (d + 1)^-tau``; built once from
    ``seed`` and ``split``, kept in memory. Offline sources: scikit-learn's
    8×8 digits (disjoint 70/30 split); ``'shapes'``, ``'noise'`` (the
    digit-only control) or ``'skimage'`` backgrounds; CIFAR-10 / MNIST are
    read from disk. Keep both labels with ``PackInputs(meta_keys=(...,
    'digit_label', 'background_label'))``.

    Args:
        split: ``'train'`` or ``'test'``.
        num_samples: Number of images. Defaults to 5,000 / 1,000 (test)
            offline, else the size of the CIFAR-10 split.
        image_size: Side of the square output image, in pixels.
        digit_size: Side of the pasted digit, in pixels (≤ image_size).
        tau: Power-law exponent of the digit distribution (≥ 0).
        label: Which label is ``gt_label``: ``'digit'`` or ``'background'``.
        background_source: ``'shapes'``, ``'noise'``, ``'skimage'``, or
            ``'cifar10'``.
        digit_source: ``'sklearn'`` (offline) or ``'mnist'``.
        background_root: CIFAR-10 ``data_root``; only for ``'cifar10'``.
        digit_root: MNIST ``data_root``; only for ``'mnist'``.
        channels: 3 (gray replicated, for standard backbones) or 1.
        shape_options: Only for ``'shapes'``: keyword arguments of
            :func:`~pmsn_mm.datasets.procedural_shapes.render_shapes`.
            Defaults to None.
        seed: Seed of every random choice.
        **kwargs: Passed to :class:`mmpretrain.datasets.BaseDataset`.
    """

    def __init__(self,
                 split: str = 'train',
                 num_samples: Optional[int] = None,
                 image_size: int = 32,
                 digit_size: int = 12,
                 tau: float = 0.5,
                 label: str = 'digit',
                 background_source: str = 'skimage',
                 digit_source: str = 'sklearn',
                 background_root: str = '',
                 digit_root: str = '',
                 channels: int = 3,
                 shape_options: Optional[dict] = None,
                 seed: int = 0,
                 **kwargs) -> None:
        check_choice('split', split, SPLITS)
        check_choice('label', label, LABELS)
        check_choice('background_source', background_source,
                     BACKGROUND_SOURCES)
        check_choice('digit_source', digit_source, DIGIT_SOURCES)
        check_choice('channels', channels, (1, 3))
        tau = check_number('PowerLawOverlayDataset tau', tau, 0)
        digit_size = check_int('PowerLawOverlayDataset digit_size',
                               digit_size, 1)
        image_size = check_int('PowerLawOverlayDataset image_size',
                               image_size, 1)
        if image_size < digit_size:
            raise ValueError(
                f'image_size={image_size} is smaller than digit_size='
                f'{digit_size}; the digit must fit in the image: raise '
                'image_size or lower digit_size.')
        if num_samples is not None:
            num_samples = check_int('PowerLawOverlayDataset num_samples',
                                    num_samples, 1)
        shape_options = dict(shape_options or {})
        unknown = sorted(set(shape_options) - set(SHAPE_OPTIONS))
        if unknown:
            raise ValueError(f'shape_options has unknown key(s) {unknown}; '
                             f'valid keys: {", ".join(SHAPE_OPTIONS)}.')
        if shape_options and background_source != 'shapes':
            raise ValueError(
                "shape_options only applies to background_source='shapes', "
                f'got background_source={background_source!r}.')
        self.split = split
        self.num_samples = num_samples
        self.image_size = image_size
        self.digit_size = digit_size
        self.tau = tau
        self.label = label
        self.background_source = background_source
        self.digit_source = digit_source
        self.background_root = background_root
        self.digit_root = digit_root
        self.channels = channels
        self.shape_options = shape_options
        self.seed = seed
        self._images: Optional[np.ndarray] = None
        self.background_classes: Tuple[str, ...] = ()
        kwargs.setdefault('test_mode', split == 'test')
        super().__init__(ann_file='', **kwargs)

    # ------------------------------------------------------------ sources
    def _load_digits(self) -> Tuple[np.ndarray, np.ndarray]:
        """Digit images (N, h, w) uint8 and labels (N,) of this split."""
        if self.digit_source == 'sklearn':
            from sklearn.datasets import load_digits
            digits = load_digits()
            images = np.clip(digits.images * (255.0 / 16.0), 0,
                             255).astype(np.uint8)
            labels = digits.target.astype(np.int64)
            # Fixed split, independent of ``seed``: train/test never overlap.
            order = np.random.RandomState(0).permutation(len(labels))
            parts = []
            for d in range(10):
                idx = order[labels[order] == d]
                cut = int(round(len(idx) * SKLEARN_TRAIN_FRACTION))
                parts.append(idx[:cut] if self.split == 'train' else idx[cut:])
            keep = np.sort(np.concatenate(parts))
            return images[keep], labels[keep]
        from mmpretrain.datasets import MNIST
        images, labels, _ = _read_split(
            MNIST, self.digit_root, self.digit_root, self.split,
            MNIST_FILES[self.split], 'MNIST',
            f"'{osp.join(self.digit_root, MNIST_FILES['train'][0])}'"
            ' (the extracted idx files)')
        return np.stack(images), labels

    def _load_cifar10(self) -> Tuple[List[np.ndarray], np.ndarray]:
        from .cifar_files import CIFAR10Files
        folder = osp.join(self.background_root, CIFAR10Files.base_folder)
        images, labels, self.background_classes = _read_split(
            CIFAR10Files, self.background_root, folder, self.split,
            CIFAR10_FILES[self.split], 'CIFAR-10',
            f"'{folder}/data_batch_1..5, test_batch, batches.meta'"
            ' (python version)')
        return images, labels

    def _backgrounds(self, rng: np.random.Generator,
                     num: Optional[int]) -> Tuple[np.ndarray, np.ndarray]:
        """Background images (N, S, S) uint8 and their class labels (N,)."""
        size = (self.image_size, self.image_size)
        if self.background_source == 'cifar10':
            images, labels = self._load_cifar10()
            num = len(images) if num is None else num
            if num > len(images):
                raise ValueError(
                    f'num_samples={num} exceeds the {len(images)} CIFAR-10 '
                    f'{self.split} images (each is used at most once).')
            pick = rng.permutation(len(images))[:num]
            out = np.stack([
                mmcv.imresize(images[i], size, interpolation='area')
                if images[i].shape != size else images[i] for i in pick
            ])
            return out, labels[pick]
        num = (5000 if self.split == 'train' else 1000) if num is None else num
        if self.background_source == 'shapes':
            self.background_classes = SHAPE_CLASSES
            labels = rng.integers(0, len(SHAPE_CLASSES), size=num)
            return render_shapes(labels, self.image_size, rng,
                                 **self.shape_options), labels
        if self.background_source == 'noise':
            self.background_classes = ('noise', )
            return (render_noise(num, self.image_size, rng),
                    np.zeros(num, dtype=np.int64))
        import skimage
        from skimage import io
        photos = [
            _to_gray_uint8(io.imread(osp.join(skimage.data.data_dir, name)))
            for name in SKIMAGE_PHOTOS
        ]
        self.background_classes = tuple(
            osp.splitext(n)[0] for n in SKIMAGE_PHOTOS)
        labels = rng.integers(0, len(photos), size=num)
        fractions = rng.uniform(*CROP_FRACTION, size=num)
        corners = rng.uniform(size=(num, 2))
        out = np.empty((num, *size), dtype=np.uint8)
        for i, (c, f, (u, v)) in enumerate(zip(labels, fractions, corners)):
            photo = photos[c]
            side = max(self.image_size, int(f * min(photo.shape)))
            y = int(u * (photo.shape[0] - side + 1))
            x = int(v * (photo.shape[1] - side + 1))
            crop = photo[y:y + side, x:x + side]
            out[i] = mmcv.imresize(crop, size, interpolation='area')
        return out, labels.astype(np.int64)

    # ------------------------------------------------------------ dataset
    def load_data_list(self) -> List[dict]:
        """Build the images and return label-only data infos."""
        rng = np.random.default_rng([self.seed, SPLITS.index(self.split)])
        backgrounds, bg_labels = self._backgrounds(rng, self.num_samples)
        num = len(backgrounds)
        digit_images, digit_labels_all = self._load_digits()
        digit_labels = rng.choice(
            10, size=num, p=power_law_probs(10, self.tau)).astype(np.int64)
        pool = [np.flatnonzero(digit_labels_all == d) for d in range(10)]
        for d in range(10):
            if len(pool[d]) == 0:
                raise ValueError(
                    f'digit source {self.digit_source!r} has no image of '
                    f'digit {d} in split {self.split!r}.')
        which = np.empty(num, dtype=np.int64)
        for d in range(10):
            rows = np.flatnonzero(digit_labels == d)
            which[rows] = pool[d][rng.integers(0, len(pool[d]), len(rows))]
        s = self.digit_size
        resized = {
            j: mmcv.imresize(digit_images[j], (s, s), interpolation='bilinear')
            for j in np.unique(which)
        }
        for i, j in enumerate(which):
            backgrounds[i, :s, :s] = resized[j]
        self._images = backgrounds
        if self._metainfo.get('classes') is None:
            self._metainfo['classes'] = (
                tuple(str(d) for d in range(10))
                if self.label == 'digit' else self.background_classes)
        gt = digit_labels if self.label == 'digit' else bg_labels
        return [
            dict(
                image_index=i,
                gt_label=int(gt[i]),
                digit_label=int(digit_labels[i]),
                background_label=int(bg_labels[i])) for i in range(num)
        ]

    def get_data_info(self, idx: int) -> dict:
        """Data info of ``idx`` with its image attached under ``img``."""
        info = super().get_data_info(idx)
        # loaded by load_data_list (full_init) before any data info
        img = cast(np.ndarray, self._images)[info['image_index']]
        info['img'] = (np.repeat(img[..., None], 3, axis=-1)
                       if self.channels == 3 else img[..., None].copy())
        return info

    def _labels(self, key: str) -> np.ndarray:
        # BaseDataset.get_data_info: the label-only info, no image attached.
        return np.array([
            BaseDataset.get_data_info(self, i)[key] for i in range(len(self))
        ], dtype=np.int64)

    def get_digit_labels(self) -> np.ndarray:
        """Digit label of every sample, shape (N,)."""
        return self._labels('digit_label')

    def get_background_labels(self) -> np.ndarray:
        """Background label of every sample, shape (N,)."""
        return self._labels('background_label')

    def extra_repr(self) -> List[str]:
        return [
            f'Split: {self.split}', f'Label: {self.label}',
            f'Digits: {self.digit_source} (tau={self.tau})',
            f'Backgrounds: {self.background_source}',
            f'Image size: {self.image_size}, digit size: {self.digit_size}'
        ]
