"""Annotation files read with errors naming the path (the original files
of the datasets; the lists the converters write are
``tools/dataset_converters/annotation_lists.py``'s)."""
import json
import os.path as osp
from typing import Any


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
