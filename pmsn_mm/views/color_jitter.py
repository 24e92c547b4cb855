"""Colour jitter of a view group: its settings, and the jitter maths that
the per-sample ``ModuloHueColorJitter`` and the device ``ColorJitterView``
share: torchvision's ``ColorJitter`` factor ranges (:func:`jitter_range`),
the four adjustments in a random order (:data:`ADJUSTMENTS`) and the hue
rotated on PIL's 8-bit hue circle (:func:`rotate_hue_8bit`).
"""
import math
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

from ..utils.validation import check_number, check_probability
from .base import ViewSettings, transform_kind

#: The four adjustments, by index (an order is a permutation of 0..3).
ADJUSTMENTS = ('brightness', 'contrast', 'saturation', 'hue')
#: Identity values of the four factors, in :data:`ADJUSTMENTS`' order.
NEUTRAL_COLOR = (1.0, 1.0, 1.0, 0.0)
#: Steps of PIL's hue circle per turn: ``convert('HSV')`` stores the hue
#: ``h`` (a fraction of a turn) as ``floor(255 h)`` in a uint8.
HUE_STEPS = 255
#: Per-sample colour jitter transforms (mmpretrain's, its numpy-2 variant).
JITTER_TYPES = ('ColorJitter', 'ModuloHueColorJitter')

_Hue = TypeVar('_Hue')


def jitter_range(name: str, strength: float) -> Tuple[float, float]:
    """The range of one adjustment's factor: ``[max(0, 1 - s), 1 + s]`` for
    brightness, contrast and saturation, ``[-s, s]`` for the hue.

    Args:
        name: One of :data:`ADJUSTMENTS`.
        strength: ``s``, >= 0 (not checked here).

    Returns:
        ``(low, high)``, floats.
    """
    s = float(strength)
    if name == 'hue':
        return -s, s
    return max(0.0, 1 - s), 1 + s


def rotate_hue_8bit(hue: _Hue, turns: Any,
                    trunc: Callable[[Any], Any] = math.trunc) -> _Hue:
    """Hue values on PIL's 8-bit circle rotated as torchvision's
    ``adjust_hue`` rotates a PIL image: by ``trunc(255 turns)`` steps,
    added modulo 256 (the uint8 wrap-around, although the circle has 255
    steps: a rotation across red loses a step, 1/255 of a turn).

    Args:
        hue: Hue steps in [0, 255]: a signed int array or a float tensor.
        turns: The rotation, a fraction of a turn in [-0.5, 0.5]: a float,
            or a tensor that broadcasts with ``hue``.
        trunc: Truncation of ``turns * 255`` (``torch.trunc`` for tensors).

    Returns:
        The rotated steps, in [0, 255], of ``hue``'s type.
    """
    return (hue + trunc(turns * HUE_STEPS)) % 256


class ColorJitterSettings(ViewSettings):
    """Colour jitter with probability ``jitter_prob``: ``brightness``,
    ``contrast``, ``saturation`` (strengths >= 0) and ``hue`` (in [0, 0.5], a
    fraction of a turn), in a random order per view. Recipe rows: those, and
    ``jitter_order`` (``'random'``). A per-sample pipeline:
    :data:`JITTER_TYPES`, alone or as the one transform of a ``RandomApply``.
    """

    defaults = dict(jitter_prob=0.0, brightness=0.0, contrast=0.0,
                    saturation=0.0, hue=0.0)
    recipe_extra = ('jitter_order', )
    absent = dict(jitter_order=None)

    def check(self, group: Dict[str, Any], where: str) -> Dict[str, Any]:
        out = dict(jitter_prob=check_probability(f'{where} jitter_prob',
                                                 group['jitter_prob']))
        for name in ADJUSTMENTS:
            out[name] = check_number(f'{where} {name}', group[name], 0.0,
                                     0.5 if name == 'hue' else None)
        return out

    def enabled(self, group: Dict[str, Any]) -> bool:
        return group['jitter_prob'] > 0 and any(group[k] > 0
                                                for k in ADJUSTMENTS)

    def recipe(self, group: Dict[str, Any]) -> Dict[str, Any]:
        return dict(super().recipe(group), jitter_order='random')

    def transform_recipe(self, transform: dict) -> Optional[Dict[str, Any]]:
        prob = 1.0
        if transform_kind(transform) == 'RandomApply':
            inner = transform['transforms']
            if len(inner) != 1:
                return None
            prob = float(transform.get('prob', 0.5))
            transform = inner[0]
        if transform_kind(transform) not in JITTER_TYPES:
            return None
        rows: Dict[str, Any] = dict(jitter_prob=prob, jitter_order='random')
        for name in ADJUSTMENTS:
            rows[name] = float(transform.get(name, 0.0) or 0.0)
        return rows
