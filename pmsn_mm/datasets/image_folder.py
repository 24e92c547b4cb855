"""Image folders (``<data_prefix>/<class>/<image>`` or a flat folder of
images) that refuse empty class folders at build time."""
import logging
from typing import Dict, List, Optional, Set, Union

import numpy as np
from mmengine.fileio import get_file_backend
from mmengine.logging import print_log
from mmpretrain.datasets import CustomDataset
from mmpretrain.datasets.custom import find_folders
from mmpretrain.registry import DATASETS

from .empty_classes import NonEmptyClassesMixin
from .non_empty import NonEmptyDatasetMixin
from .read_errors import NamedReadErrorsMixin

#: Values of ``with_label``.
WITH_LABEL = (True, False, 'auto')
#: Values of ``split``.
SPLITS = (None, 'train', 'val')


def holdout_mask(num: int, fraction: float) -> np.ndarray:
    """Which of ``num`` sorted images are held out: ``floor(num * f)``,
    spread evenly (``floor((i + 1) f) > floor(i f)``; 0.2: 5th, 10th, ...).

    Args:
        num: Images of one class.
        fraction: ``f``, in (0, 1).

    Returns:
        Bool array of shape (num,).
    """
    i = np.arange(num)
    return np.floor((i + 1) * fraction) > np.floor(i * fraction)


@DATASETS.register_module()
class ImageFolderDataset(NamedReadErrorsMixin, NonEmptyDatasetMixin,
                         NonEmptyClassesMixin, CustomDataset):
    """mmpretrain's ``CustomDataset`` for a folder of images, with class
    sub-folders or without, that refuses classes without samples.

    Without ``ann_file``, every sub-folder of ``data_prefix`` is a class
    (sorted names), its image files (recursively) its samples. A class
    without a sample is refused naming its folder, where mmpretrain only
    warns; so are a missing or imageless folder (docs/own_data.md).
    ``split`` holds out ``floor(n * val_fraction)`` images of each class,
    spread evenly (:func:`holdout_mask`), as ``'val'``.

    Args:
        data_root: Root of ``data_prefix`` and ``ann_file``.
        data_prefix: The folder of the class folders (or of the files an
            ``ann_file`` lists), relative to ``data_root``.
        ann_file: ``<path> <label>`` list, or '' to scan the folder.
        with_label: True (class sub-folders), False (unlabelled) or
            ``'auto'`` (sub-folders if any). Defaults to True.
        split: None (every image), ``'train'`` or ``'val'`` (see above).
        val_fraction: Share of each class in ``'val'``. Defaults to 0.2.
        allow_empty_classes: Keep classes without samples (warning, as
            mmpretrain) instead of raising. Defaults to False.
        **kwargs: Passed to :class:`mmpretrain.datasets.CustomDataset`.

    Example:
        >>> dataset = dict(type='ImageFolderDataset',
        ...                data_root='data/my_set', data_prefix='train',
        ...                pipeline=train_pipeline)
    """

    def __init__(self,
                 *args,
                 with_label: Union[bool, str] = True,
                 split: Optional[str] = None,
                 val_fraction: float = 0.2,
                 **kwargs) -> None:
        if not (isinstance(with_label, bool) or with_label == 'auto'):
            raise ValueError(f'ImageFolderDataset with_label must be one of '
                             f'{WITH_LABEL} but is {with_label!r}.')
        if split not in SPLITS:
            raise ValueError(f'ImageFolderDataset split must be one of '
                             f'{SPLITS} but is {split!r}.')
        if isinstance(val_fraction, bool) or not isinstance(
                val_fraction, (int, float)) or not 0 < val_fraction < 1:
            raise ValueError('ImageFolderDataset val_fraction must be in '
                             f'(0, 1) but is {val_fraction!r}.')
        self.auto_label = with_label == 'auto'
        self.split = split
        self.val_fraction = float(val_fraction)
        super().__init__(
            *args, with_label=True if self.auto_label else with_label,
            **kwargs)

    def _where(self) -> str:
        return (f'ImageFolderDataset (data_root={self.data_root!r}, folder '
                f'{self.img_prefix!r})')

    def _find_samples(self) -> list:
        """mmpretrain's folder scan, with ``with_label='auto'`` resolved and
        clear errors for a missing or image-less folder."""
        backend = get_file_backend(self.img_prefix, enable_singleton=True)
        if not backend.isdir(self.img_prefix):
            raise ValueError(
                f'{self._where()}: the folder does not exist. Point '
                'data_root (and data_prefix) at a folder of images (the '
                '*image-folder* configs read it from the environment '
                'variable IMAGE_FOLDER).')
        if self.auto_label:
            self.with_label = bool(find_folders(self.img_prefix, backend)[0])
            if not self.with_label:
                self._metainfo['classes'] = ()
        try:
            samples = super()._find_samples()
        except RuntimeError as err:
            if 'Found 0 files' not in str(err):
                raise
            top = [f for f in backend.list_dir_or_file(
                self.img_prefix, list_dir=False, list_file=True,
                recursive=False) if self.is_valid_file(f)]
            extensions = ', '.join(sorted(self.extensions))
            if top and self.with_label:
                raise ValueError(
                    f'{self._where()}: {len(top)} image file(s) but no class '
                    'sub-folder; with_label=True reads the classes from '
                    'sub-folders. Put the images into one folder per class '
                    '(kNN, logistic-regression and linear-probe benchmarks '
                    'need these labels), or, for pretraining only, set '
                    "with_label='auto' or False to read them unlabelled."
                    ) from err
            raise ValueError(
                f'{self._where()}: no image file (extensions {extensions}) '
                'in it or its sub-folders. Point data_root at a folder of '
                'images, or change extensions.') from err
        if self.with_label:
            loose = [f for f in backend.list_dir_or_file(
                self.img_prefix, list_dir=False, list_file=True,
                recursive=False) if self.is_valid_file(f)]
            if loose:
                print_log(
                    f'{self._where()}: {len(loose)} image file(s) next to the '
                    'class sub-folders belong to no class and are not read '
                    f'(e.g. {sorted(loose)[0]!r}).', logger='current',
                    level=logging.WARNING)
        return samples

    def load_data_list(self) -> List[dict]:
        """The images (and labels), then the ``split``."""
        data_list = super().load_data_list()
        if self.split is None:
            return data_list
        groups: Dict[int, List[int]] = {}
        for i, info in enumerate(data_list):
            groups.setdefault(int(info.get('gt_label', 0)), []).append(i)
        val: Set[int] = set()
        for members in groups.values():
            mask = holdout_mask(len(members), self.val_fraction)
            val.update(m for m, held in zip(members, mask) if held)
        keep = (self.split == 'val')
        kept = [info for i, info in enumerate(data_list)
                if (i in val) == keep]
        if not kept:
            raise ValueError(
                f"{self._where()}: split={self.split!r} holds no image: with "
                f'val_fraction={self.val_fraction}, a class needs at least '
                f'{int(np.ceil(1 / self.val_fraction - 1e-9))} images to '
                "give one to 'val' (the largest of the "
                f'{len(groups)} has {max(map(len, groups.values()))}). Add '
                'images or raise val_fraction.')
        return kept

    def get_gt_labels(self) -> np.ndarray:
        """Labels of every image; refused for an unlabelled folder."""
        self._check_labelled()
        return super().get_gt_labels()

    def get_cat_ids(self, idx: int) -> List[int]:
        """``[label]`` of image ``idx``; refused for an unlabelled folder.

        Args:
            idx: Index of the image.
        """
        self._check_labelled()
        return super().get_cat_ids(idx)

    def _check_labelled(self) -> None:
        if not self.with_label:
            why = ("with_label='auto' and no class sub-folder"
                   if self.auto_label else 'with_label=False')
            raise ValueError(
                f'{self._where()} is unlabelled ({why}), so its images have '
                'no class labels; put them into one folder per class (and '
                "set with_label=True or 'auto').")

    @property
    def has_classes(self) -> bool:
        """Whether the images are labelled (class folders, ``ann_file``)."""
        return bool(self.with_label)
