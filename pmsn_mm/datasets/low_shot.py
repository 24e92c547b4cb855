"""Low-shot training subsets: seeded per-class subsets or an official list
(SimCLR's ``1percent.txt`` for ImageNet 1 %), drawn from the wrapped
training dataset only, so they never touch a test split.
"""
import os.path as osp
from typing import Dict, List, Optional, Sequence, Union, cast

import numpy as np
from mmengine.dataset import BaseDataset
from mmpretrain.registry import DATASETS

from ..utils.labels import get_dataset_labels
from ..utils.validation import check_int, check_number


def per_class_subset_indices(labels: Union[Sequence[int], np.ndarray],
                             images_per_class: Optional[int] = None,
                             fraction: Optional[float] = None,
                             seed: int = 0) -> np.ndarray:
    """Seeded per-class subset of a labelled dataset.

    Exactly one of ``images_per_class`` and ``fraction`` is given; class
    ``c`` keeps ``images_per_class`` or ``max(1, round(fraction * n_c))``
    images, chosen by a permutation from ``np.random.default_rng(seed)``.

    Args:
        labels: Class label of every image, shape (N,).
        images_per_class: Images kept per class (>= 1, <= every n_c).
        fraction: Fraction of every class kept, in (0, 1].
        seed: Seed of the choice.

    Returns:
        Sorted int64 indices into ``labels``.
    """
    if (images_per_class is None) == (fraction is None):
        raise ValueError('Give exactly one of images_per_class and fraction, '
                         f'got images_per_class={images_per_class}, '
                         f'fraction={fraction}.')
    if images_per_class is not None:
        images_per_class = check_int('images_per_class', images_per_class, 1)
    if fraction is not None:
        fraction = check_number('fraction', fraction, 0, 1, low_open=True)
    labels = np.asarray(labels, dtype=np.int64)
    rng = np.random.default_rng(seed)
    keep = []
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        if images_per_class is not None:
            count = images_per_class
            if count > len(members):
                raise ValueError(
                    f'images_per_class={images_per_class} but class {cls} '
                    f'has only {len(members)} images.')
        else:
            # fraction is given when images_per_class is not
            count = max(1, int(round(cast(float, fraction) * len(members))))
        keep.append(rng.permutation(members)[:count])
    if not keep:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.concatenate(keep)).astype(np.int64)


def read_image_list(list_file: str) -> List[str]:
    """File names of a subset list (e.g. SimCLR's ``1percent.txt``).

    Args:
        list_file: Text file, one image file name per line.

    Returns:
        The non-empty, stripped lines.
    """
    if not osp.isfile(list_file):
        raise FileNotFoundError(
            f'Subset list file not found: {list_file} (expected one image '
            'file name per line, e.g. n01558993_4351.JPEG).')
    with open(list_file) as f:
        names = [line.strip() for line in f if line.strip()]
    if not names:
        raise ValueError(f'Subset list file {list_file} is empty.')
    return names


def list_subset_indices(img_paths: Sequence[str],
                        names: Sequence[str],
                        source: str = 'list file') -> np.ndarray:
    """Indices of the images whose file name (basename) is in ``names``.

    Args:
        img_paths: Path of every image of the dataset.
        names: Listed file names (basenames, e.g. ``n01558993_4351.JPEG``).
        source: Where ``names`` came from, for error messages.

    Returns:
        Sorted int64 indices, one per listed name.
    """
    index: Dict[str, List[int]] = {}
    for i, path in enumerate(img_paths):
        index.setdefault(osp.basename(path), []).append(i)
    wanted = sorted(set(names))
    missing = [name for name in wanted if name not in index]
    if missing:
        raise ValueError(
            f'{len(missing)} of the {len(wanted)} images listed in {source} '
            f'are not in the dataset, e.g. {missing[:3]}.')
    ambiguous = [name for name in wanted if len(index[name]) > 1]
    if ambiguous:
        raise ValueError(
            f'Listed file names occur more than once in the dataset, e.g. '
            f'{ambiguous[:3]}; {source} cannot select them.')
    return np.sort(np.array([index[n][0] for n in wanted], dtype=np.int64))


@DATASETS.register_module()
class LowShotDataset:
    """A seeded per-class subset, or a listed subset, of a labelled dataset.

    Give exactly one of ``fraction``, ``images_per_class`` and
    ``list_file``. ``dataset[i]`` is ``dataset.dataset[indices[i]]``.

    Example (ImageNet 1% with SimCLR's list)::

        dict(type='LowShotDataset', list_file='data/imagenet/1percent.txt',
             dataset=dict(type='ImageNet', data_root='data/imagenet',
                          split='train', pipeline=train_pipeline))

    Args:
        dataset: The full labelled training dataset (config or instance;
            ``img_path`` in its data infos for ``list_file``).
        fraction: Keep this fraction of every class, in (0, 1].
        images_per_class: Keep this many images of every class.
        list_file: Keep the images whose file names this file lists.
        seed: Seed of the per-class choice (unused with ``list_file``).
    """

    def __init__(self,
                 dataset: Union[dict, BaseDataset],
                 fraction: Optional[float] = None,
                 images_per_class: Optional[int] = None,
                 list_file: Optional[str] = None,
                 seed: int = 0) -> None:
        given = [name for name, value in (('fraction', fraction), (
            'images_per_class', images_per_class), ('list_file', list_file))
                 if value is not None]
        if len(given) != 1:
            raise ValueError('Give exactly one of fraction, images_per_class '
                             f'and list_file, got {given or "none"}.')
        self.dataset = DATASETS.build(dataset) if isinstance(
            dataset, dict) else dataset
        self.fraction = fraction
        self.images_per_class = images_per_class
        self.list_file = list_file
        self.seed = seed
        self._labels: Optional[np.ndarray] = None
        if list_file is not None:
            paths = [self.dataset.get_data_info(i)['img_path']
                     for i in range(len(self.dataset))]
            self.indices = list_subset_indices(
                paths, read_image_list(list_file), list_file)
        else:
            self._labels = get_dataset_labels(self.dataset)
            self.indices = per_class_subset_indices(
                self._labels, images_per_class, fraction, seed)

    @property
    def metainfo(self) -> dict:
        """Meta information of the wrapped dataset."""
        return dict(getattr(self.dataset, 'metainfo', {}))

    def full_init(self) -> None:
        """No-op: the subset is built in ``__init__``."""

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, idx: int):
        return self.dataset[int(self.indices[idx])]

    def get_data_info(self, idx: int) -> dict:
        """Data info of the ``idx``-th image of the subset.

        Args:
            idx: Index into the subset.
        """
        return self.dataset.get_data_info(int(self.indices[idx]))

    def get_gt_labels(self) -> np.ndarray:
        """Class labels of the subset, shape (len(self),)."""
        if self._labels is None:
            self._labels = get_dataset_labels(self.dataset)
        return self._labels[self.indices]

    def get_cat_ids(self, idx: int) -> List[int]:
        """Category ids of the ``idx``-th image of the subset.

        Args:
            idx: Index into the subset.
        """
        if self._labels is None:
            self._labels = get_dataset_labels(self.dataset)
        return [int(self._labels[self.indices[idx]])]
