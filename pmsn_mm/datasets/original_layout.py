"""Datasets read straight from their original annotation layout."""
import os.path as osp
from typing import List, Sequence, Tuple

from mmpretrain.datasets import BaseDataset

from ..utils.validation import check_choice
from .non_empty import NonEmptyDatasetMixin
from .read_errors import NamedReadErrorsMixin


class OriginalLayoutDataset(NamedReadErrorsMixin, NonEmptyDatasetMixin,
                            BaseDataset):
    """An mmpretrain ``BaseDataset`` whose samples come from the dataset's
    own annotation files (no list to convert, no image read): subclasses
    set ``SPLITS`` and implement :meth:`samples`.

    Args:
        data_root: The dataset's root folder.
        split: One of ``SPLITS``. Defaults to ``'train'``.
        **kwargs: Passed to :class:`mmpretrain.datasets.BaseDataset`
            (``test_mode`` defaults to ``split != 'train'``).
    """

    SPLITS: Sequence[str] = ('train', 'test')

    def __init__(self, data_root: str, split: str = 'train', **kwargs) -> None:
        check_choice('split', split, tuple(self.SPLITS))
        self.split = split
        kwargs.setdefault('test_mode', split != 'train')
        super().__init__(ann_file='', data_root=data_root, **kwargs)

    def samples(self) -> List[Tuple[str, int]]:
        """``(relative image path, label)`` of every image of the split."""
        raise NotImplementedError

    def load_data_list(self) -> List[dict]:
        """Image paths and labels of :meth:`samples`."""
        return [
            dict(img_path=osp.join(self.data_root, rel), gt_label=label)
            for rel, label in self.samples()
        ]
