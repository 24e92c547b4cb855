"""iNaturalist 2018 (8,142 species, long-tailed), read from the official JSON.

The pretraining set of the paper's §5.2 and one of its §4 transfer tasks
(Appendix E.2 follows VISSL). The label of an image is the ``category_id``
of its annotation (VISSL reads the same number from the image path).

Expected layout (``data_root``)::

    train2018.json   {"images": [{"id": 0, "file_name":
    val2018.json        "train_val2018/Plantae/7477/<hash>.jpg"}, ...],
                      "annotations": [{"image_id": 0, "category_id": 7477},
                                      ...], ...}
    train_val2018/<supercategory>/<category_id>/<hash>.jpg
"""
import os.path as osp
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from mmpretrain.registry import DATASETS

from ..utils.validation import check_choice
from .annotation_io import read_json_dict, require_list_field
from .original_layout import OriginalLayoutDataset

INAT18_NUM_CLASSES = 8142
#: Our split -> official annotation file stem; iNat18's val set is the usual
#: test set, so ``'test'`` is an alias of ``'val'``.
INAT18_SPLITS: Dict[str, str] = {
    'train': 'train2018',
    'val': 'val2018',
    'test': 'val2018'
}
#: Class names: the category ids, as strings ('0' ... '8141').
INAT18_CLASSES: Tuple[str, ...] = tuple(
    str(i) for i in range(INAT18_NUM_CLASSES))
#: Wraps an iterable to show progress (``tqdm`` in the converter).
ProgressFn = Callable[[Iterable], Iterable]


def inat18_annotation_file(data_root: str, split: str) -> str:
    """``<data_root>/train2018.json`` or ``<data_root>/val2018.json``.

    Args:
        data_root: Folder holding the JSON files and ``train_val2018/``.
        split: ``'train'``, ``'val'`` or ``'test'`` (= ``'val'``).
    """
    check_choice('split', split, tuple(INAT18_SPLITS))
    return osp.join(data_root, f'{INAT18_SPLITS[split]}.json')


def _field(entry: dict, key: str, kind: type, where: str):
    value = entry.get(key) if isinstance(entry, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{where} needs a field '{key}' of type "
                         f'{kind.__name__}, got {value!r}.')
    return value


def inat18_samples(annotation: dict,
                   source: str = 'iNat18 annotation',
                   progress: Optional[ProgressFn] = None
                   ) -> List[Tuple[str, int]]:
    """``(file_name, category_id)`` of every image of an iNat18 JSON.

    The single source of the iNat18 labels (also of
    ``tools/dataset_converters/convert_inat18.py``).

    Args:
        annotation: Parsed ``train2018.json`` / ``val2018.json``.
        source: The file it came from, for error messages.
        progress: Optional wrapper of the image iterable (e.g. ``tqdm``).

    Returns:
        One pair per entry of ``images``, in file order; ``file_name`` is
        relative to ``data_root``.
    """
    images = require_list_field(annotation, 'images', source)
    annotations = require_list_field(annotation, 'annotations', source)
    category_of: Dict[int, int] = {}
    for i, ann in enumerate(annotations):
        where = f'{source}: annotations[{i}]'
        image_id = _field(ann, 'image_id', int, where)
        category = _field(ann, 'category_id', int, where)
        if not 0 <= category < INAT18_NUM_CLASSES:
            raise ValueError(
                f"{where}: 'category_id' must be in [0, "
                f'{INAT18_NUM_CLASSES}), got {category}.')
        category_of[image_id] = category
    samples = []
    for i, image in enumerate(progress(images) if progress else images):
        where = f'{source}: images[{i}]'
        image_id = _field(image, 'id', int, where)
        file_name = _field(image, 'file_name', str, where)
        if image_id not in category_of:
            raise ValueError(
                f"{where} (id {image_id}) has no entry in 'annotations' "
                "(no 'category_id').")
        samples.append((file_name, category_of[image_id]))
    return samples


@DATASETS.register_module()
class INat18(OriginalLayoutDataset):
    """iNaturalist 2018 from ``{train,val}2018.json``; label = category_id.

    Args:
        data_root: Folder holding ``train2018.json``, ``val2018.json`` and
            the ``train_val2018/`` image folders.
        split: ``'train'``, ``'val'`` or ``'test'`` (an alias of ``'val'``:
            the official val set is the usual test set).
        **kwargs: Passed to :class:`mmpretrain.datasets.BaseDataset`.
    """

    METAINFO = {'classes': INAT18_CLASSES}
    SPLITS = tuple(INAT18_SPLITS)

    def samples(self) -> List[Tuple[str, int]]:
        """Image paths and labels from the JSON."""
        path = inat18_annotation_file(self.data_root, self.split)
        annotation = read_json_dict(
            path, 'Set data_root to the folder holding train2018.json, '
            'val2018.json and train_val2018/ (docs/data.md). To try a '
            'config without the dataset, write small sample files in its '
            'layout: python tools/dataset_converters/make_sample_data.py '
            'data --formats inat18 (run from the folder the config\'s '
            'data/ paths are relative to).')
        return inat18_samples(annotation, path)
