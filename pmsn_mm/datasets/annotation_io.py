"""Annotation file I/O: original files read with errors naming the path,
and mmpretrain ``CustomDataset`` lists written by the converters."""
import json
import os
import os.path as osp
from typing import Any, Iterable, Sequence, Tuple


def read_json_dict(path: str, hint: str) -> dict:
    """Load a JSON file whose top level is an object.

    Args:
        path: File to read.
        hint: What the file is and where it should be, appended to the
            FileNotFoundError message (e.g. "set data_root to ...").

    Returns:
        The parsed dict.
    """
    if not osp.isfile(path):
        raise FileNotFoundError(f'Annotation file not found: {path}. {hint}')
    with open(path) as f:
        try:
            data: Any = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f'{path} is not valid JSON: {e}') from e
    if not isinstance(data, dict):
        raise ValueError(f'{path} must hold a JSON object at the top level, '
                         f'got {type(data).__name__}.')
    return data


def require_list_field(data: dict, field: str, path: str) -> list:
    """``data[field]``, checked to be a list.

    Args:
        data: Parsed JSON object.
        field: Name of the required top-level field.
        path: The file it came from (for the message).

    Returns:
        The list.
    """
    value = data.get(field)
    if not isinstance(value, list):
        raise ValueError(f"{path} must hold a list field '{field}', got "
                         f'{type(value).__name__}.')
    return value


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
