"""What one view augmentation is on the device: the random numbers it reads
and how it applies itself to a batch of views (its settings are its
:class:`~pmsn_mm.views.base.ViewSettings`, in ``pmsn_mm/views/``).

Random numbers: a group draws one tensor of uniforms of shape
``(views * images, width)`` (one call), and each augmentation reads its own
:attr:`ViewAugment.columns` of it (a fixed layout, so that a seed gives the
views it always gave); :meth:`ViewAugment.draw` may draw more, before that
shared draw.
"""
from dataclasses import dataclass, field
from typing import (Any, Callable, ClassVar, Dict, Hashable, Optional, Tuple,
                    Union, cast)

import torch
from torch import Tensor

from ....views.base import ViewSettings

_CONSTANTS: Dict[Tuple[Hashable, torch.dtype, torch.device], Tensor] = {}


def device_constant(key: Hashable, device: Union[str, torch.device],
                    build: Callable[[], Any],
                    dtype: torch.dtype = torch.float32) -> Tensor:
    """A small constant tensor on ``device``, built once and cached.

    The first call per ``(key, device)`` uploads ``build()``; later calls
    return the cached tensor (no host-to-device copy per step).

    Args:
        key: Hashable name of the constant, unique to its values.
        device: Where the constant lives.
        build: Returns the values.
        dtype: dtype of the tensor.

    Returns:
        The cached tensor (never modify it in place).
    """
    device = torch.device(device)
    full_key = (key, dtype, device)
    cached = _CONSTANTS.get(full_key)
    if cached is None:
        values = build()
        cached = (values if isinstance(values, Tensor) else
                  torch.tensor(values, dtype=dtype)).to(device=device,
                                                        dtype=dtype)
        _CONSTANTS[full_key] = cached
    return cached


@dataclass
class ViewDraws:
    """The random numbers of one view group of one batch.

    Attributes:
        num: Images in the batch (N).
        views: Views per image (V); view ``v`` of image ``i`` is row
            ``v * N + i`` of every per-view tensor (view-major).
        device: Where the batch is.
        generator: The group's generator (None: torch's global one).
        heights: Long tensor of shape (N,), each image's height.
        widths: Long tensor of shape (N,), each image's width.
        uniforms: Tensor of shape (V * N, width) uniform in [0, 1), the
            group's shared draw (set after every :meth:`ViewAugment.draw`).
        extra: What augmentations drew for themselves, by name.
        coin_probs: Column -> probability of every augmentation's coin
            (:attr:`ViewAugment.coin_prob`), compared in one op per group.
    """
    num: int
    views: int
    device: torch.device
    generator: Optional[torch.Generator]
    heights: Tensor
    widths: Tensor
    uniforms: Optional[Tensor] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    coin_probs: Dict[int, float] = field(default_factory=dict)
    _coins: Optional[Tensor] = field(default=None, repr=False)

    def _all_coins(self) -> Optional[Tensor]:
        """Every coin of the group, (V * N, columns), from one comparison
        (None unless the coin columns are contiguous)."""
        columns = sorted(self.coin_probs)
        if self._coins is None and columns == list(
                range(columns[0], columns[-1] + 1)):
            assert self.uniforms is not None, 'draw before the coins'
            probs = tuple(self.coin_probs[c] for c in columns)
            self._coins = self.uniforms[:, columns[0]:columns[-1] + 1] < \
                device_constant(('view coins', probs), self.device,
                                lambda: list(probs))
        return self._coins

    def coin(self, column: int, prob: float, name: str) -> Tensor:
        """Bool tensor of shape (V * N,): column ``column`` of the shared
        draw below ``prob`` (an augmentation applied with probability
        ``prob``, per view).

        Args:
            column: A column of :attr:`uniforms`.
            prob: The probability (a device constant, cached by ``name``).
            name: Name of the constant.
        """
        if self.coin_probs.get(column) == prob:
            coins = self._all_coins()
            if coins is not None:
                return coins[:, column - min(self.coin_probs)]
        uniforms = cast(Tensor, self.uniforms)  # drawn before the coins
        return uniforms[:, column] < device_constant(
            (name, prob), self.device, lambda: prob)


class ViewAugment(ViewSettings):
    """One augmentation of a view group on the device: a subclass of its
    :class:`~pmsn_mm.views.base.ViewSettings`, listed in
    :data:`~pmsn_mm.models.data_preprocessors.views.AUGMENTS`.

    Attributes:
        columns: The columns of the group's shared uniform draw it reads.
        coin_prob: The setting that is the probability of the coin in
            ``columns[0]`` (:meth:`ViewDraws.coin`), if it tosses one.
    """

    columns: ClassVar[Tuple[int, ...]] = ()
    coin_prob: ClassVar[Optional[str]] = None

    def draw(self, draws: ViewDraws, group: Dict[str, Any]) -> None:
        """Draw what the shared uniforms do not hold (into ``draws.extra``);
        runs before the shared draw. Default: nothing.

        Args:
            draws: The group's draws so far.
            group: The checked group.
        """

    def apply(self, images: Tensor, group: Dict[str, Any],
              draws: ViewDraws) -> Tensor:
        """Apply itself to the views.

        Args:
            images: Float tensor in [0, 255]: the views (V * N, C, h, w)
                (the crop gets the batch (N, C, H, W) and makes the views).
            group: The checked group.
            draws: The group's draws.

        Returns:
            The augmented views, shape (V * N, C, h, w).
        """
        raise NotImplementedError
