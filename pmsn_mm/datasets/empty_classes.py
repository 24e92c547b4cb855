"""A clear error, at build time, for classes without samples.

mmpretrain's ``CustomDataset`` keeps a class folder without an image file
as a class and only logs a warning; a consumer of the class counts fails
much later (``ClassPrior``: ``entries [2] are 0``). Datasets that inherit
:class:`NonEmptyClassesMixin` raise a ``ValueError`` while they load,
naming every empty class folder and the opt-in ``allow_empty_classes``.
"""
from typing import Any, Dict, List, Sequence, cast

from mmengine.fileio import get_file_backend

#: Classes named in the ``ann_file`` error (empty folders: all of them).
MAX_LISTED = 20
#: The setting that keeps classes without samples.
ALLOW_SETTING = 'allow_empty_classes'
_OPT_IN = (f'or set {ALLOW_SETTING}=True (allowed values: True, False; '
           'default False) to keep them as classes without samples.')


def _where(dataset) -> str:
    """``Type (data_root=...[, split=...][, ann_file=...])``.

    Args:
        dataset: The dataset (an mmengine ``BaseDataset``).
    """
    fields = [f'data_root={getattr(dataset, "data_root", None)!r}']
    if getattr(dataset, 'split', None) is not None:
        fields.append(f'split={dataset.split!r}')
    if getattr(dataset, 'ann_file', ''):
        fields.append(f'ann_file={dataset.ann_file!r}')
    return f'{type(dataset).__name__} ({", ".join(fields)})'


def check_allow_empty_classes(value: bool) -> bool:
    """Raise ``ValueError`` unless ``value`` is a bool.

    Args:
        value: The ``allow_empty_classes`` setting.

    Returns:
        ``value``.
    """
    if not isinstance(value, bool):
        raise ValueError(f'{ALLOW_SETTING} must be one of (True, False) but '
                         f'is {value!r}.')
    return value


def empty_folders(folder_to_idx: Dict[str, int],
                  labels: Sequence[int]) -> List[str]:
    """Class folders (sorted names) whose index no sample has.

    Args:
        folder_to_idx: Class folder name -> class index (``CustomDataset``'s).
        labels: The label of every loaded sample.
    """
    present = set(int(label) for label in labels)
    return sorted(name for name, idx in folder_to_idx.items()
                  if idx not in present)


def empty_folders_message(dataset, folders: Sequence[str]) -> str:
    """The error text for class folders without an image.

    Args:
        dataset: The dataset (a ``CustomDataset`` in folder-tree mode).
        folders: Full paths of the empty class folders.
    """
    extensions = ', '.join(sorted(getattr(dataset, 'extensions', ())))
    listed = ', '.join(repr(f) for f in folders)
    return (f'{_where(dataset)}: {len(folders)} class folder(s) hold no '
            f'image file (extensions {extensions}): {listed}. Every '
            'sub-folder of data_prefix is a class; add images to them or '
            f'remove them (or change extensions), {_OPT_IN}')


def empty_listed_classes_message(dataset, missing: Sequence[int],
                                 classes: Sequence[str]) -> str:
    """The error text for classes that no ``ann_file`` sample has.

    Args:
        dataset: The dataset (a ``CustomDataset`` with ``ann_file``).
        missing: Indices of the classes without a sample.
        classes: The dataset's class names.
    """
    listed = ', '.join(f'{i} ({classes[i]!r})'
                       for i in missing[:MAX_LISTED])
    if len(missing) > MAX_LISTED:
        listed += f' and {len(missing) - MAX_LISTED} more'
    return (f'{_where(dataset)}: {len(missing)} of the {len(classes)} '
            f'classes have no sample in ann_file: {listed}. Add samples for '
            'them or remove them from classes (the labels index classes), '
            f'{_OPT_IN}')


class NonEmptyClassesMixin:
    """Refuse a class without samples unless ``allow_empty_classes=True``.

    For a subclass of mmpretrain's ``CustomDataset`` (before it among the
    bases): every class folder must hold an image file, and with an
    ``ann_file`` and ``classes`` (and :attr:`CHECK_LISTED_CLASSES`) every
    listed class must have a sample. Hooks into ``load_data_list``.

    Args:
        *args: Passed to the next class.
        allow_empty_classes: Keep classes without samples.
        **kwargs: Passed to the next class.
    """

    #: Also check ``ann_file`` lists against ``classes``. Off for datasets
    #: whose ``classes`` is a fixed category list that partial annotation
    #: lists use in part (``Places205Sorted``).
    CHECK_LISTED_CLASSES: bool = True
    # set by the mmpretrain dataset this class is mixed into
    ann_file: str
    img_prefix: str
    metainfo: dict

    def __init__(self, *args, allow_empty_classes: bool = False,
                 **kwargs) -> None:
        self.allow_empty_classes = check_allow_empty_classes(
            allow_empty_classes)
        super().__init__(*args, **kwargs)

    def load_data_list(self) -> List[dict]:
        """``super().load_data_list()``, refusing classes without samples."""
        # the dataset's (after this class in the MRO)
        data_list = cast(Any, super()).load_data_list()
        if self.allow_empty_classes or not getattr(self, 'with_label', True):
            return data_list
        labels = [info['gt_label'] for info in data_list
                  if 'gt_label' in info]
        if not self.ann_file:
            folders = empty_folders(getattr(self, 'folder_to_idx', {}),
                                    labels)
            if folders:
                backend = get_file_backend(self.img_prefix,
                                           enable_singleton=True)
                raise ValueError(empty_folders_message(
                    self, [backend.join_path(self.img_prefix, name)
                           for name in folders]))
        elif self.CHECK_LISTED_CLASSES:
            classes = self.metainfo.get('classes')
            if classes is not None:
                present = set(int(label) for label in labels)
                missing = [i for i in range(len(classes))
                           if i not in present]
                if missing:
                    raise ValueError(empty_listed_classes_message(
                        self, missing, classes))
        return data_list
