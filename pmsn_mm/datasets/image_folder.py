"""Class-folder image sets (``<data_prefix>/<class>/<image>``) that refuse
empty class folders at build time."""
from mmpretrain.datasets import CustomDataset
from mmpretrain.registry import DATASETS

from .empty_classes import NonEmptyClassesMixin
from .non_empty import NonEmptyDatasetMixin
from .read_errors import NamedReadErrorsMixin


@DATASETS.register_module()
class ImageFolderDataset(NamedReadErrorsMixin, NonEmptyDatasetMixin,
                         NonEmptyClassesMixin, CustomDataset):
    """mmpretrain's ``CustomDataset`` that refuses classes without samples.

    Without ``ann_file``, every sub-folder of ``data_prefix`` is a class
    (label ``i``: the ``i``-th folder name in sorted order; the names become
    ``classes`` unless ``metainfo`` gives them) and its image files,
    recursively, are its samples. A class folder without an image file
    (of ``extensions``) raises a ``ValueError`` naming every such folder by
    its full path, where mmpretrain's ``CustomDataset`` only logs a warning
    and keeps the class. With an ``ann_file`` (``<path> <label>`` lines) and
    ``classes`` in ``metainfo``, a class that no line has is refused the
    same way. ``allow_empty_classes=True`` keeps mmpretrain's behaviour.

    An unreadable image names the dataset (:class:`NamedReadErrorsMixin`);
    an empty dataset (after ``filter_cfg`` / ``indices``) is refused
    (:class:`NonEmptyDatasetMixin`); a tree without any image file keeps
    mmpretrain's ``RuntimeError: Found 0 files in subfolders of ...``.

    Args:
        data_root: Root of ``data_prefix`` and ``ann_file``.
        data_prefix: The folder of the class folders (or of the files an
            ``ann_file`` lists), relative to ``data_root``.
        ann_file: ``<path> <label>`` list, or '' to scan the class folders.
        allow_empty_classes: Keep classes without samples (mmpretrain's
            warning) instead of raising. Defaults to False.
        **kwargs: Passed to :class:`mmpretrain.datasets.CustomDataset`
            (``with_label``, ``extensions``, ``metainfo``, ``pipeline``,
            ...).

    Example:
        >>> dataset = dict(type='ImageFolderDataset',
        ...                data_root='data/my_set', data_prefix='train',
        ...                pipeline=train_pipeline)
    """
