"""mmpretrain ``CustomDataset`` annotation lists, written by the converters
beside this file (the labels come from :mod:`pmsn_mm.datasets`, so the lists
and the registered datasets agree)."""
import os
import os.path as osp
from typing import Iterable, Sequence, Tuple


def write_annotation_list(path: str,
                          samples: Iterable[Tuple[str, int]]) -> int:
    """Write an mmpretrain ``CustomDataset`` list: ``<rel path> <label>``.

    Args:
        path: Output file (parent folders are created).
        samples: ``(image path relative to data_root, label)`` pairs.

    Returns:
        Number of lines written.
    """
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    count = 0
    with open(path, 'w') as f:
        for rel_path, label in samples:
            f.write(f'{rel_path} {int(label)}\n')
            count += 1
    return count


def write_class_names(path: str, classes: Sequence[str]) -> None:
    """Write one class name per line (``CustomDataset(classes=path)``).

    Args:
        path: Output file (parent folders are created).
        classes: Class names in label order.
    """
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        f.writelines(f'{name}\n' for name in classes)
