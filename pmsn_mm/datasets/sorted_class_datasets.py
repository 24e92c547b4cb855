"""Places205 and CIFAR100 with class indices fixed by sorted class names.

VISSL (the paper's Appendix E.2 evaluation) numbers classes by folder name
order, which is not stable across its converters (``os.listdir`` order).
These subclasses make label ``i`` always mean the ``i``-th class name in
sorted order: mmpretrain's ``PLACES205_CATEGORIES`` follows the official
``categoryIndex_places205.csv``, which is *not* sorted
(:class:`Places205Sorted` remaps it); CIFAR-100's ``fine_label_names`` are
sorted in the official release, and :class:`CIFAR100Sorted` still reads
and remaps them so that a re-packed copy cannot silently permute them.
"""
import os.path as osp
import pickle
from typing import Dict, List, Optional, Sequence, Tuple, Union

from mmengine.fileio import get, join_path
from mmpretrain.datasets import CIFAR100, Places205
from mmpretrain.datasets.categories import (CIFAR100_CATEGORIES,
                                            PLACES205_CATEGORIES)
from mmpretrain.registry import DATASETS

from .cifar_files import CIFARFilesMixin
from .empty_classes import NonEmptyClassesMixin
from .non_empty import NonEmptyDatasetMixin
from .read_errors import NamedReadErrorsMixin

PLACES205_SORTED_CATEGORIES: Tuple[str, ...] = tuple(
    sorted(PLACES205_CATEGORIES))
CIFAR100_SORTED_CATEGORIES: Tuple[str, ...] = tuple(
    sorted(CIFAR100_CATEGORIES))
#: ``split`` shortcut of :class:`Places205Sorted` -> official list name.
PLACES205_SPLITS: Dict[str, str] = {'train': 'train', 'val': 'val',
                                    'test': 'val'}
PLACES205_IMAGE_DIR = 'data/vision/torralba/deeplearning/images256'


def sorted_label_map(names: Sequence[str],
                     sorted_names: Sequence[str]) -> Dict[int, int]:
    """Map an index into ``names`` to that name's index in ``sorted_names``.

    Args:
        names: Class names in the order the labels of the files refer to.
        sorted_names: The same names, sorted.

    Returns:
        ``{old_label: new_label}`` for every class.
    """
    if sorted(names) != list(sorted_names):
        missing = sorted(set(sorted_names) - set(names))[:5]
        extra = sorted(set(names) - set(sorted_names))[:5]
        raise ValueError(
            f'The class names of the files do not match the expected '
            f'{len(sorted_names)} classes (missing e.g. {missing}, '
            f'unexpected e.g. {extra}).')
    position = {name: i for i, name in enumerate(sorted_names)}
    return {i: position[name] for i, name in enumerate(names)}


def _remap(data_list: List[dict], mapping: Dict[int, int],
           source: str) -> List[dict]:
    for info in data_list:
        label = info['gt_label']
        if label not in mapping:
            raise ValueError(f'{source}: label {label} is not in [0, '
                             f'{len(mapping)}).')
        info['gt_label'] = mapping[label]
    return data_list


def places205_class_from_path(rel_path: str) -> Optional[str]:
    """Class name encoded in an official Places205 image path, if any.

    Official paths are ``<first letter>/<class name>/<file>``.

    Args:
        rel_path: Image path relative to the image folder.

    Returns:
        The class name, or None when the path does not have that form.
    """
    parts = rel_path.replace('\\', '/').split('/')
    if len(parts) < 3 or len(parts[0]) != 1:
        return None
    return '/'.join(parts[1:-1])


@DATASETS.register_module()
class Places205Sorted(NamedReadErrorsMixin, NonEmptyDatasetMixin,
                      NonEmptyClassesMixin, Places205):
    """mmpretrain's ``Places205`` with labels in sorted class-name order.

    With an annotation list (official ``<letter>/<class>/<file> <label>``
    lines, possibly of part of the classes), the label comes from the class
    name in the path, checked against the official label; without one (a
    ``<class>/<image>`` tree), labels follow the sorted folder names and an
    empty class folder is refused unless ``allow_empty_classes=True``.

    Args:
        data_root: Root of ``data_prefix`` and ``ann_file``.
        split: Optional shortcut for the official layout (``'train'``,
            ``'val'``/``'test'``): sets the official ``ann_file`` and
            ``data_prefix`` unless they are given.
        data_prefix: Image folder (relative to ``data_root``).
        ann_file: Annotation list, or '' to scan a folder tree.
        **kwargs: Passed to :class:`mmpretrain.datasets.Places205`, and
            ``allow_empty_classes`` (default False).
    """

    METAINFO = {'classes': PLACES205_SORTED_CATEGORIES}
    # partial official lists (and the sample data) use some of the classes
    CHECK_LISTED_CLASSES = False

    def __init__(self,
                 data_root: str = '',
                 split: Optional[str] = None,
                 data_prefix: Union[str, dict] = '',
                 ann_file: str = '',
                 **kwargs) -> None:
        if split is not None:
            if split not in PLACES205_SPLITS:
                raise ValueError(f'split must be None or one of '
                                 f'{tuple(PLACES205_SPLITS)}, got {split!r}.')
            ann_file = ann_file or osp.join(
                'trainvalsplit_places205',
                f'{PLACES205_SPLITS[split]}_places205.csv')
            data_prefix = data_prefix or PLACES205_IMAGE_DIR
            kwargs.setdefault('test_mode', split != 'train')
        self.split = split
        super().__init__(
            data_root=data_root,
            data_prefix=data_prefix,
            ann_file=ann_file,
            **kwargs)

    def load_data_list(self) -> List[dict]:
        """Load as mmpretrain does, then renumber to sorted class order."""
        data_list = super().load_data_list()
        if not self.ann_file:
            # CustomDataset numbered the sorted folder names already.
            self._metainfo['classes'] = tuple(self.folder_to_idx)
            return data_list
        official = sorted_label_map(PLACES205_CATEGORIES,
                                    PLACES205_SORTED_CATEGORIES)
        position = {n: i for i, n in enumerate(PLACES205_SORTED_CATEGORIES)}
        for info in data_list:
            label = info['gt_label']
            if label not in official:
                raise ValueError(f'{self.ann_file}: label {label} is not in '
                                 f'[0, {len(official)}).')
            name = places205_class_from_path(
                osp.relpath(info['img_path'], self.img_prefix))
            if name in position:
                if name != PLACES205_CATEGORIES[label]:
                    raise ValueError(
                        f"{self.ann_file}: {info['img_path']} is in class "
                        f"folder '{name}' but has official label {label} "
                        f"('{PLACES205_CATEGORIES[label]}').")
                info['gt_label'] = position[name]
            else:
                info['gt_label'] = official[label]
        return data_list


@DATASETS.register_module()
class CIFAR100Sorted(CIFARFilesMixin, NonEmptyDatasetMixin, CIFAR100):
    """mmpretrain's ``CIFAR100`` with labels in sorted class-name order.

    Args:
        data_root: Folder holding ``cifar-100-python/``.
        split: ``'train'`` or ``'test'``.
        **kwargs: Passed to :class:`mmpretrain.datasets.CIFAR100`
            (``download`` defaults to False here: no network at run time).
    """

    METAINFO = {'classes': CIFAR100_SORTED_CATEGORIES}

    def __init__(self, data_root: str = '', split: str = 'train',
                 **kwargs) -> None:
        kwargs.setdefault('download', False)
        super().__init__(data_root=data_root, split=split, **kwargs)

    def load_data_list(self) -> List[dict]:
        """Load as mmpretrain does, then renumber by the ``meta`` names."""
        data_list = super().load_data_list()
        path = join_path(self.data_prefix['root'], self.base_folder,
                         self.meta['filename'])
        names = pickle.loads(get(path), encoding='latin1')[self.meta['key']]
        mapping = sorted_label_map(names, CIFAR100_SORTED_CATEGORIES)
        return _remap(data_list, mapping, path)
