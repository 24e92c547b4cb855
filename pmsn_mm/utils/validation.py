"""Argument checks whose errors name the setting and its allowed values."""
from typing import Any, Sequence, Tuple


def check_choice(name: str, value: Any, choices: Sequence) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``.

    Args:
        name: The setting, as the user wrote it (e.g. ``'kl_direction'``).
        value: Its value.
        choices: The allowed values.
    """
    if value not in choices:
        raise ValueError(f'{name} must be one of {tuple(choices)} but is '
                         f'{value!r}.')


def check_index_list(name: str,
                     values: Sequence[int],
                     size: int,
                     what: str = '',
                     distinct: bool = False,
                     context: str = '') -> Tuple[int, ...]:
    """Check a non-empty list of indices into ``size`` items.

    Args:
        name: The setting, e.g. ``'target_layers'``.
        values: Its value.
        size: Indices must be in ``[0, size)``.
        what: What is indexed, for the message (e.g. ``'block '``).
        distinct: Also require distinct indices.
        context: Appended to the allowed range in the message.

    Returns:
        The indices as a tuple.
    """
    indices = tuple(values)
    ok = bool(indices) and all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < size
        for i in indices)
    if ok and distinct:
        ok = len(set(indices)) == len(indices)
    if not ok:
        kind = 'distinct ' if distinct else ''
        raise ValueError(
            f'{name} must be a non-empty list of {kind}{what}indices in '
            f'[0, {size}){context}, but is {values!r}.')
    return indices
