"""CIFAR python pickles read from disk without the official checksums.

mmpretrain's ``CIFAR10``/``CIFAR100`` refuse any file whose MD5 differs from
the official release's (suggesting ``download=True``), so a re-packed copy or a
sample set is refused. :class:`CIFARFilesMixin` checks that the files exist,
naming the missing ones, and names the file when a pickle does not read.
"""
import os.path as osp
import pickle
from typing import Any, List, cast

from mmengine.fileio import exists, join_path
from mmpretrain.datasets import CIFAR10


class CIFARFilesMixin:
    """Presence check instead of MD5 for mmpretrain's CIFAR datasets.

    Put it first among the bases of a ``CIFAR10``/``CIFAR100`` subclass.
    """

    # set by the mmpretrain CIFAR dataset this class is mixed into
    data_prefix: dict
    base_folder: str
    train_list: list
    test_list: list
    meta: dict

    def _check_integrity(self) -> bool:
        """True when every file is there; else a FileNotFoundError."""
        root = self.data_prefix['root']
        names = [entry[0] for entry in self.train_list + self.test_list]
        names.append(self.meta['filename'])
        folder = join_path(root, self.base_folder)
        missing = [n for n in names if not exists(join_path(folder, n))]
        if missing:
            raise FileNotFoundError(
                f'{type(self).__name__}: files missing in {folder}: '
                f'{missing}. Expected the python version of the dataset '
                f'({", ".join(names)}); nothing is downloaded at run time.')
        return True

    def load_data_list(self) -> List[dict]:
        """mmpretrain's loading, naming the folder if a pickle is bad."""
        try:
            # the CIFAR dataset's (after this class in the MRO)
            return cast(Any, super()).load_data_list()
        except (pickle.UnpicklingError, EOFError, KeyError,
                ValueError) as e:
            folder = osp.join(self.data_prefix['root'], self.base_folder)
            raise ValueError(
                f'{type(self).__name__}: the pickles in {folder} do not '
                f'read as CIFAR python batches ({type(e).__name__}: {e}).'
            ) from e


class CIFAR10Files(CIFARFilesMixin, CIFAR10):
    """mmpretrain's ``CIFAR10`` with :class:`CIFARFilesMixin` (not
    registered; the toy set reads its backgrounds with it).

    Args:
        **kwargs: Passed to mmpretrain's ``CIFAR10``.
    """
