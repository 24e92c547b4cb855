"""CLEVR/Count and CLEVR/Dist, read from the original CLEVR_v1.0 scene files.

Transfer tasks of the paper's §4 evaluation, labelled as VISSL's
``create_clevr_{count,dist}_data_files.py``. CLEVR's test split has no
scenes, so (as in VISSL) our ``'test'`` split is CLEVR's val split.

Expected layout (``data_root`` is the ``CLEVR_v1.0`` folder)::

    CLEVR_v1.0/
        scenes/CLEVR_train_scenes.json   {"scenes": [{"image_filename": ...,
        scenes/CLEVR_val_scenes.json                  "objects": [...]}, ...]}
        images/train/CLEVR_train_000000.png
        images/val/CLEVR_val_000000.png
"""
import bisect
import os.path as osp
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from mmpretrain.registry import DATASETS

from ..utils.validation import check_choice
from .annotation_io import read_json_dict, require_list_field
from .original_layout import OriginalLayoutDataset

#: Our split -> the official CLEVR split whose scenes are annotated.
CLEVR_SPLITS: Dict[str, str] = {'train': 'train', 'test': 'val'}
#: CLEVR scenes hold 3 to 10 objects: 8 count classes, label = count - 3.
CLEVR_MIN_OBJECTS = 3
CLEVR_MAX_OBJECTS = 10
CLEVR_COUNT_CLASSES: Tuple[str, ...] = tuple(
    f'count_{n}' for n in range(CLEVR_MIN_OBJECTS, CLEVR_MAX_OBJECTS + 1))
#: Upper bounds of the 6 depth bins of VISSL's CLEVR/Dist.
CLEVR_DIST_THRESHOLDS: Tuple[float, ...] = (8.0, 8.5, 9.0, 9.5, 10.0, 100.0)
CLEVR_DIST_CLASSES: Tuple[str, ...] = tuple(
    f'below_{t}' for t in CLEVR_DIST_THRESHOLDS)
#: Wraps an iterable to show progress (``tqdm`` in the converters).
ProgressFn = Callable[[Iterable], Iterable]


def _objects(scene: dict) -> list:
    """The non-empty ``objects`` list of a scene, or a ValueError."""
    objects = scene.get('objects') if isinstance(scene, dict) else None
    if not isinstance(objects, list) or not objects:
        name = scene.get('image_filename', '?') if isinstance(
            scene, dict) else '?'
        raise ValueError(
            f"scene '{name}' must have a non-empty list field 'objects', got "
            f'{objects!r}.')
    return objects


def clevr_count_label(scene: dict) -> int:
    """CLEVR/Count class of a scene: number of objects minus 3.

    Args:
        scene: One entry of the scene JSON's ``scenes`` list.

    Returns:
        Class index in [0, 8) (3 objects -> 0, ..., 10 objects -> 7).
    """
    count = len(_objects(scene))
    if not CLEVR_MIN_OBJECTS <= count <= CLEVR_MAX_OBJECTS:
        raise ValueError(
            f"scene '{scene.get('image_filename', '?')}' has {count} "
            f"'objects'; CLEVR/Count expects {CLEVR_MIN_OBJECTS} to "
            f'{CLEVR_MAX_OBJECTS}.')
    return count - CLEVR_MIN_OBJECTS


def clevr_dist_label(scene: dict) -> int:
    """CLEVR/Dist class of a scene: depth bin of its closest object.

    ``bisect_left(CLEVR_DIST_THRESHOLDS, d)`` for the smallest
    ``pixel_coords[2]`` ``d`` of the objects (VISSL); ``d = 8.0`` is class 0.

    Args:
        scene: One entry of the scene JSON's ``scenes`` list.

    Returns:
        Class index in [0, 6).
    """
    depths = []
    for obj in _objects(scene):
        coords = obj.get('pixel_coords') if isinstance(obj, dict) else None
        if not isinstance(coords, (list, tuple)) or len(coords) != 3:
            raise ValueError(
                f"every object of scene '{scene.get('image_filename', '?')}'"
                f" needs a field 'pixel_coords' = [x, y, depth], got "
                f'{coords!r}.')
        depths.append(float(coords[2]))
    depth = min(depths)
    label = bisect.bisect_left(CLEVR_DIST_THRESHOLDS, depth)
    if label == len(CLEVR_DIST_THRESHOLDS):
        raise ValueError(
            f"scene '{scene.get('image_filename', '?')}': closest object "
            f'depth {depth} is above the last CLEVR/Dist threshold '
            f'{CLEVR_DIST_THRESHOLDS[-1]}.')
    return label


def clevr_scene_file(data_root: str, split: str) -> str:
    """Path of the scene JSON of one of our splits.

    Args:
        data_root: The ``CLEVR_v1.0`` folder.
        split: ``'train'`` or ``'test'`` (= official val).

    Returns:
        ``<data_root>/scenes/CLEVR_<official split>_scenes.json``.
    """
    check_choice('split', split, tuple(CLEVR_SPLITS))
    return osp.join(data_root, 'scenes',
                    f'CLEVR_{CLEVR_SPLITS[split]}_scenes.json')


def load_clevr_scenes(data_root: str, split: str) -> List[dict]:
    """Read and check the ``scenes`` list of a split.

    Args:
        data_root: The ``CLEVR_v1.0`` folder.
        split: ``'train'`` or ``'test'``.

    Returns:
        The list of scene dicts, each with an ``image_filename``.
    """
    path = clevr_scene_file(data_root, split)
    data = read_json_dict(
        path, 'Set data_root to the CLEVR_v1.0 folder (holding scenes/ and '
        'images/). Sample files in its layout: python '
        'tools/dataset_converters/make_sample_data.py data --formats clevr.')
    scenes = require_list_field(data, 'scenes', path)
    for i, scene in enumerate(scenes):
        if not isinstance(scene, dict) or not isinstance(
                scene.get('image_filename'), str):
            raise ValueError(f"{path}: scene {i} has no string field "
                             "'image_filename'.")
    return scenes


def clevr_samples(data_root: str,
                  split: str,
                  label_fn: Callable[[dict], int],
                  progress: Optional[ProgressFn] = None
                  ) -> List[Tuple[str, int]]:
    """``(image path relative to data_root, label)`` of every scene.

    The single source of the CLEVR labels (also of ``convert_clevr.py``).

    Args:
        data_root: The ``CLEVR_v1.0`` folder.
        split: ``'train'`` or ``'test'`` (= official val).
        label_fn: :func:`clevr_count_label` or :func:`clevr_dist_label`.
        progress: Optional wrapper of the scene iterable (e.g. ``tqdm``).

    Returns:
        One ``(relative path, label)`` pair per scene, in file order.
    """
    scenes = load_clevr_scenes(data_root, split)
    folder = osp.join('images', CLEVR_SPLITS[split])
    samples = []
    for scene in (progress(scenes) if progress else scenes):
        try:
            label = label_fn(scene)
        except ValueError as e:
            raise ValueError(
                f'{clevr_scene_file(data_root, split)}: {e}') from e
        samples.append((osp.join(folder, scene['image_filename']), label))
    return samples


class _CLEVRBase(OriginalLayoutDataset):
    """Shared loader of the CLEVR tasks; subclasses set ``label_fn``."""

    SPLITS = tuple(CLEVR_SPLITS)
    label_fn: Callable[[dict], int]

    def samples(self) -> List[Tuple[str, int]]:
        """Image paths and labels from the scene JSON."""
        return clevr_samples(self.data_root, self.split, type(self).label_fn)


@DATASETS.register_module()
class CLEVRCount(_CLEVRBase):
    """CLEVR/Count: classify the number of objects (3-10 -> 8 classes).

    Args:
        data_root: The ``CLEVR_v1.0`` folder (see module docstring).
        split: ``'train'`` (official train) or ``'test'`` (official val).
        **kwargs: Passed to :class:`mmpretrain.datasets.BaseDataset`.
    """

    METAINFO = {'classes': CLEVR_COUNT_CLASSES}
    label_fn = staticmethod(clevr_count_label)


@DATASETS.register_module()
class CLEVRDist(_CLEVRBase):
    """CLEVR/Dist: classify the depth of the closest object (6 bins).

    Args:
        data_root: The ``CLEVR_v1.0`` folder (see module docstring).
        split: ``'train'`` (official train) or ``'test'`` (official val).
        **kwargs: Passed to :class:`mmpretrain.datasets.BaseDataset`.
    """

    METAINFO = {'classes': CLEVR_DIST_CLASSES}
    label_fn = staticmethod(clevr_dist_label)
