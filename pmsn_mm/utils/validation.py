"""Argument checks whose errors name the setting and its allowed values.

The one validation module of pmsn_mm: every setting is checked once, where
it is stored, with one of these functions. Booleans are never accepted as
numbers, non-finite numbers never as real values, and nothing is clamped.
"""
import math
from numbers import Integral, Real
from typing import Any, Optional, Sequence, Tuple


def _interval(low: Optional[float], high: Optional[float], low_open: bool,
              high_open: bool) -> str:
    left = '-inf' if low is None else f'{low:g}'
    right = 'inf' if high is None else f'{high:g}'
    return (('(' if low is None or low_open else '[') + f'{left}, {right}' +
            (')' if high is None or high_open else ']'))


def check_int(name: str,
              value: Any,
              minimum: Optional[int] = None,
              maximum: Optional[int] = None) -> int:
    """Return ``value`` as an int; raise unless it is an integer in range.

    Args:
        name: The setting, as the user writes it (e.g. ``'num_prototypes'``).
        value: Its value (numpy integers are accepted, bools are not).
        minimum: Smallest allowed value, or None. Defaults to None.
        maximum: Largest allowed value, or None. Defaults to None.

    Returns:
        ``int(value)``.
    """
    ok = isinstance(value, Integral) and not isinstance(value, bool)
    ok = ok and (minimum is None or value >= minimum) and (maximum is None
                                                           or value <= maximum)
    if not ok:
        if minimum is not None and maximum is None:
            allowed = f'an int >= {minimum}'
        else:
            allowed = 'an int in ' + _interval(minimum, maximum, False, False)
        raise ValueError(f'{name} must be {allowed} but is {value!r}.')
    return int(value)


def check_number(name: str,
                 value: Any,
                 low: Optional[float] = None,
                 high: Optional[float] = None,
                 low_open: bool = False,
                 high_open: bool = False) -> float:
    """Return ``value`` as a float; raise unless finite and in the interval.

    Args:
        name: The setting, e.g. ``'temperature'``.
        value: Its value (bools are not numbers here).
        low: Lower bound, or None for none. Defaults to None.
        high: Upper bound, or None for none. Defaults to None.
        low_open: Exclude ``low`` itself. Defaults to False.
        high_open: Exclude ``high`` itself. Defaults to False.

    Returns:
        ``float(value)``.
    """
    ok = isinstance(value, Real) and not isinstance(value, bool) \
        and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        allowed = ('a finite number' if low is None and high is None else
                   'in ' + _interval(low, high, low_open, high_open))
        raise ValueError(f'{name} must be {allowed} but is {value!r}.')
    return float(value)


def check_positive(name: str, value: Any) -> float:
    """``check_number(name, value, 0, low_open=True)``: a finite number > 0.

    Args:
        name: The setting.
        value: Its value.

    Returns:
        ``float(value)``.
    """
    return check_number(name, value, 0, low_open=True)


def check_probability(name: str, value: Any) -> float:
    """``check_number(name, value, 0, 1)``: a probability in [0, 1].

    Args:
        name: The setting.
        value: Its value.

    Returns:
        ``float(value)``.
    """
    return check_number(name, value, 0, 1)


def check_range_pair(name: str,
                     value: Any,
                     low: Optional[float] = None,
                     high: Optional[float] = None,
                     low_open: bool = False) -> Tuple[float, float]:
    """Check a ``(min, max)`` pair with ``low <= min <= max <= high``.

    Args:
        name: The setting, e.g. ``'scale'``.
        value: A sequence of two finite numbers.
        low: Lower bound of ``min``, or None. Defaults to None.
        high: Upper bound of ``max``, or None. Defaults to None.
        low_open: ``min`` must be > ``low`` instead of >=. Defaults to False.

    Returns:
        ``(float(min), float(max))``.
    """
    try:
        pair = tuple(value)
    except TypeError:
        pair = ()
    ok = len(pair) == 2 and all(
        isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v)
        for v in pair)
    if ok:
        ok = pair[0] <= pair[1]
        if low is not None:
            ok = ok and (pair[0] > low if low_open else pair[0] >= low)
        if high is not None:
            ok = ok and pair[1] <= high
    if not ok:
        lo = '' if low is None else f'{low:g} {"<" if low_open else "<="} '
        hi = '' if high is None else f' <= {high:g}'
        raise ValueError(f'{name} must be (min, max) with {lo}min <= max'
                         f'{hi} but is {value!r}.')
    return float(pair[0]), float(pair[1])


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
