"""KITTI/Dist: distance bin of the closest vehicle, from KITTI object labels.

Transfer task of the paper's §4 evaluation (Appendix E.2 follows VISSL); the
label rule re-states VISSL's ``extra_scripts/datasets/
create_kitti_dist_data_files.py``: ``d`` is the smallest camera-frame depth
``z`` (field 13 of a label line) over the Car/Van/Truck objects of an image,
``-inf`` when there is none, and the class is
``bisect_left((0.0, 8.0, 20.0), d)``:

=====  ===============  ==========================
class  name             distance of closest vehicle
=====  ===============  ==========================
0      ``no_vehicle``   none (or ``d <= 0``)
1      ``below_8``      ``0 < d <= 8`` m
2      ``below_20``     ``8 < d <= 20`` m
3      ``above_20``     ``d > 20`` m
=====  ===============  ==========================

Only KITTI's ``training`` part is labelled, so VISSL draws an unseeded
80/20 train/test split from it; ours is seeded and reproducible.

Expected layout (``data_root``)::

    training/label_2/000000.txt   one object per line, 15 fields:
                                  type truncated occluded alpha x1 y1 x2 y2
                                  h w l x y z rotation_y
    training/image_2/000000.png
"""
import bisect
import glob
import math
import os.path as osp
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from mmpretrain.registry import DATASETS

from ..utils.validation import check_choice, check_number
from .original_layout import OriginalLayoutDataset

KITTI_VEHICLE_TYPES: Tuple[str, ...] = ('Car', 'Van', 'Truck')
KITTI_DIST_THRESHOLDS: Tuple[float, ...] = (0.0, 8.0, 20.0)
KITTI_DIST_CLASSES: Tuple[str, ...] = ('no_vehicle', 'below_8', 'below_20',
                                       'above_20')
KITTI_SPLITS: Tuple[str, ...] = ('train', 'test')
#: Fields of a KITTI object label line; the depth z is ``fields[13]``.
KITTI_NUM_FIELDS = 15
KITTI_Z_FIELD = 13
LABEL_DIR = osp.join('training', 'label_2')
IMAGE_DIR = osp.join('training', 'image_2')
#: Wraps an iterable to show progress (``tqdm`` in the converter).
ProgressFn = Callable[[Iterable], Iterable]


def closest_vehicle_distance(label_lines: Iterable[str],
                             source: str = 'label lines') -> float:
    """Smallest depth ``z`` over the Car/Van/Truck objects of one image.

    Args:
        label_lines: Lines of a ``label_2/<id>.txt`` file.
        source: Name of the file, for error messages.

    Returns:
        The distance in metres, or ``-inf`` when there is no vehicle.
    """
    distances = []
    for lineno, line in enumerate(label_lines, 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < KITTI_NUM_FIELDS:
            raise ValueError(
                f'{source}, line {lineno}: expected {KITTI_NUM_FIELDS} '
                'space-separated fields (type truncated occluded alpha '
                'x1 y1 x2 y2 h w l x y z rotation_y), got '
                f'{len(fields)}: {line.strip()!r}.')
        if fields[0] not in KITTI_VEHICLE_TYPES:
            continue
        try:
            distances.append(float(fields[KITTI_Z_FIELD]))
        except ValueError as e:
            raise ValueError(
                f'{source}, line {lineno}: field {KITTI_Z_FIELD} (location '
                f'z) must be a number, got {fields[KITTI_Z_FIELD]!r}.') from e
    return min(distances, default=-math.inf)


def kitti_dist_label(label_lines: Iterable[str],
                     source: str = 'label lines') -> int:
    """KITTI/Dist class of one image (see the module docstring's table):
    ``bisect_left((0, 8, 20), d)`` in [0, 4) for the distance ``d`` of
    :func:`closest_vehicle_distance` (same arguments).
    """
    return bisect.bisect_left(KITTI_DIST_THRESHOLDS,
                              closest_vehicle_distance(label_lines, source))


def kitti_train_test_split(image_ids: Sequence[str],
                           train_fraction: float = 0.8,
                           seed: int = 0) -> Dict[str, List[str]]:
    """Seeded, reproducible train/test split of KITTI image ids.

    Of the sorted ids; ``round(n * train_fraction)`` train images (VISSL).

    Args:
        image_ids: KITTI image ids (e.g. ``'000123'``).
        train_fraction: Fraction of images in the train split, in (0, 1).
        seed: Seed of the permutation.

    Returns:
        ``{'train': sorted ids, 'test': sorted ids}``.
    """
    check_number('train_fraction', train_fraction, 0, 1, low_open=True,
                 high_open=True)
    ids = sorted(image_ids)
    order = np.random.default_rng(seed).permutation(len(ids))
    num_train = int(round(len(ids) * train_fraction))
    return dict(
        train=sorted(ids[i] for i in order[:num_train]),
        test=sorted(ids[i] for i in order[num_train:]))


def kitti_dist_samples(data_root: str,
                       split: str,
                       train_fraction: float = 0.8,
                       seed: int = 0,
                       progress: Optional[ProgressFn] = None
                       ) -> List[Tuple[str, int]]:
    """``(image path relative to data_root, label)`` of a KITTI/Dist split.

    The single source of the labels and split (also of
    ``convert_kitti_dist.py``).

    Args:
        data_root: Folder holding ``training/{label_2,image_2}``.
        split: ``'train'`` or ``'test'``.
        train_fraction: Fraction of the labelled images used for training.
        seed: Seed of :func:`kitti_train_test_split`.
        progress: Optional wrapper of the id iterable (e.g. ``tqdm``).

    Returns:
        One ``(training/image_2/<id>.png, label)`` pair per image, by id.
    """
    check_choice('split', split, KITTI_SPLITS)
    label_dir = osp.join(data_root, LABEL_DIR)
    if not osp.isdir(label_dir):
        raise FileNotFoundError(
            f'KITTI label folder not found: {label_dir}. Set data_root to '
            'the folder holding training/label_2/*.txt and '
            'training/image_2/*.png.')
    ids = [osp.splitext(osp.basename(p))[0]
           for p in glob.glob(osp.join(label_dir, '*.txt'))]
    if not ids:
        raise FileNotFoundError(f'No *.txt label files in {label_dir}.')
    ids = kitti_train_test_split(ids, train_fraction, seed)[split]
    samples = []
    for image_id in (progress(ids) if progress else ids):
        path = osp.join(label_dir, f'{image_id}.txt')
        with open(path) as f:
            label = kitti_dist_label(f, source=path)
        samples.append((osp.join(IMAGE_DIR, f'{image_id}.png'), label))
    return samples


@DATASETS.register_module()
class KITTIDist(OriginalLayoutDataset):
    """KITTI/Dist: 4-way classification of the closest vehicle's distance.

    Args:
        data_root: Folder holding ``training/{label_2,image_2}``.
        split: ``'train'`` or ``'test'`` (a seeded 80/20 split).
        train_fraction: Fraction of images in the train split.
        seed: Seed of the split; train and test must use the same one.
        **kwargs: Passed to :class:`mmpretrain.datasets.BaseDataset`.
    """

    METAINFO = {'classes': KITTI_DIST_CLASSES}
    SPLITS = KITTI_SPLITS

    def __init__(self,
                 data_root: str,
                 split: str = 'train',
                 train_fraction: float = 0.8,
                 seed: int = 0,
                 **kwargs) -> None:
        self.train_fraction = check_number('KITTIDist train_fraction',
                                           train_fraction, 0, 1,
                                           low_open=True, high_open=True)
        self.seed = seed
        super().__init__(data_root=data_root, split=split, **kwargs)

    def samples(self) -> List[Tuple[str, int]]:
        """Image paths and labels from ``label_2``."""
        return kitti_dist_samples(self.data_root, self.split,
                                  self.train_fraction, self.seed)
