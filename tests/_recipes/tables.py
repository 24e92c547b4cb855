"""The recipe tables (``configs/recipes/*.yaml``): loading them, the row a
config must match, comparing values, and the ``{N}xb{B}`` of a config name.

Light (PyYAML and the standard library): ``.dev_scripts/recipes_to_md.py``
reads the tables with it without building anything.
"""
import os.path as osp
import re
from typing import Any, Dict, Tuple

#: ``_{GPUs}xb{per-GPU batch}-`` in an mmpretrain config name.
NAME_BATCH = re.compile(r'_(\d+)xb(\d+)[-_]')


def round_value(value: Any) -> Any:
    """Floats rounded to 12 significant digits, tuples as lists.

    Args:
        value: A number, a list/tuple of them (nested) or anything else
            (returned as is).
    """
    if isinstance(value, float):
        return float(f'{value:.12g}')
    if isinstance(value, (list, tuple)):
        return [round_value(v) for v in value]
    return value


def name_batch(path: str, batch_size: int) -> Tuple[int, int]:
    """``(GPUs, per-GPU batch)`` of the config name ``..._{N}xb{B}-...``.

    Args:
        path: The config file (only its name is read).
        batch_size: The config's ``train_dataloader.batch_size``.

    Raises:
        ValueError: If the name has no ``NxbB`` or ``B`` differs from
            ``batch_size``.
    """
    name = osp.basename(path)
    match = NAME_BATCH.search(name)
    if match is None:
        raise ValueError(f'{name!r}: the config name has no "{{N}}xb{{B}}" '
                         '(GPUs x per-GPU batch).')
    gpus, per_gpu = int(match.group(1)), int(match.group(2))
    if batch_size != per_gpu:
        raise ValueError(f'{name}: the name says {per_gpu} images per GPU, '
                         f'train_dataloader.batch_size is {batch_size}.')
    return gpus, per_gpu


def _load_yaml(path: str) -> dict:
    import yaml
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ValueError(f'{path}: a recipe table must be a mapping.')
    return data


def load_recipe_table(path: str) -> dict:
    """A recipe table with its ``base`` tables merged in.

    ``values``, ``deviations`` and ``notes`` of the bases come first and are
    overridden by the file's own; ``configs`` are the file's only.

    Args:
        path: ``configs/recipes/<experiment>.yaml``.

    Returns:
        The table: ``experiment``, ``title``, ``paper``, ``configs``,
        ``values``, ``deviations``, ``notes``.
    """
    table = _load_yaml(path)
    unknown = sorted(set(table) - {'experiment', 'title', 'paper', 'base',
                                   'configs', 'values', 'deviations',
                                   'notes'})
    if unknown:
        raise ValueError(f'{path}: unknown keys {unknown}.')
    merged: Dict[str, Any] = dict(values={}, deviations={}, notes=[])
    if table.get('base'):
        base = load_recipe_table(
            osp.join(osp.dirname(path), f"{table['base']}.yaml"))
        merged['values'].update(base['values'])
        merged['deviations'].update(base['deviations'])
        merged['notes'].extend(base['notes'])
    merged['values'].update(table.get('values') or {})
    merged['deviations'].update(table.get('deviations') or {})
    merged['notes'].extend(table.get('notes') or [])
    for key in ('experiment', 'title', 'paper'):
        merged[key] = table.get(key)
    merged['configs'] = table.get('configs') or {}
    return merged


def expected_recipe(table: dict, config: str) -> Dict[str, dict]:
    """What one config of a table must train: ``{key: entry}``.

    Each entry is the row's ``{value, source}`` (per-config values first) or,
    where a deviation is listed (per-config first), ``{value, reason,
    recipe}`` with ``recipe`` the replaced value. A view group whose
    ``num_views`` is null is absent: its keys are dropped.

    Args:
        table: A table from :func:`load_recipe_table`.
        config: A config path listed in the table's ``configs``.

    Raises:
        ValueError: If an entry lacks its value and source/reason, or a
            deviation equals the value it replaces.
    """
    own = table['configs'].get(config) or {}
    values = dict(table['values'], **(own.get('values') or {}))
    deviations = dict(table['deviations'], **(own.get('deviations') or {}))
    rows: Dict[str, dict] = {}
    for key, entry in values.items():
        if not isinstance(entry, dict) or 'value' not in entry \
                or not entry.get('source'):
            raise ValueError(f'{config}: values.{key} needs a value and a '
                             'source.')
        rows[key] = dict(entry)
    for key, entry in deviations.items():
        if not isinstance(entry, dict) or 'value' not in entry \
                or not entry.get('reason'):
            raise ValueError(f'{config}: deviations.{key} needs a value and '
                             'a reason.')
        recipe = rows.get(key, {}).get('value')
        if key in rows and same_value(recipe, entry['value']):
            raise ValueError(f'{config}: deviation {key} = {entry["value"]!r}'
                             ' equals the recipe value it replaces.')
        rows[key] = dict(entry, recipe=recipe)
    absent = {key.split('.')[1] for key, entry in rows.items()
              if key.startswith('views.') and key.endswith('.num_views')
              and entry['value'] is None}
    return {key: entry for key, entry in rows.items()
            if not (key.startswith('views.') and key.split('.')[1] in absent)}


def same_value(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Equal, floats to ``rel`` relative tolerance, lists element-wise.

    Args:
        a: A resolved or tabled value.
        b: The value to compare it with.
        rel: Relative tolerance of floats.
    """
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y, rel) for x, y in
                                        zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)
    return a == b
