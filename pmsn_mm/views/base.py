"""What one view augmentation's settings are: their names, defaults and
checks, and the rows of the recipe tables they make.

Each augmentation of a view group declares its settings in a
:class:`ViewSettings` of a file of its own here; its device code subclasses
it in ``pmsn_mm/models/data_preprocessors/views/``. Pure Python: the data
pipeline reads the settings without the models.
"""
from typing import Any, ClassVar, Dict, Optional, Tuple


def transform_kind(transform: dict) -> str:
    """The class name of a transform config (``'mmpretrain.X'`` -> ``'X'``).

    Args:
        transform: A transform config dict with a string ``type``.
    """
    return str(transform['type']).split('.')[-1]


class ViewSettings:
    """The settings of one augmentation of a view group (subclass it in a
    file of its own and add it to :data:`pmsn_mm.views.SETTINGS`).

    Each makes its own ``views.<i>.<field>`` rows of the recipe tables,
    from a device view group (:meth:`recipe`) or from a per-sample pipeline
    (:meth:`absent_recipe`, :meth:`transform_recipe`).

    Attributes:
        defaults: The group settings it reads (keys of ``views=[...]``) and
            their defaults (no effect unless asked for).
        recipe_extra: Recipe rows after its settings saying how it applies
            them (e.g. ``interpolation``).
        unrecorded: Settings that the recipe tables do not record.
        absent: Its rows of a pipeline without its transforms, where they
            differ from those of its defaults.
    """

    defaults: ClassVar[Dict[str, Any]] = {}
    recipe_extra: ClassVar[Tuple[str, ...]] = ()
    unrecorded: ClassVar[Tuple[str, ...]] = ()
    absent: ClassVar[Dict[str, Any]] = {}

    def check(self, group: Dict[str, Any], where: str) -> Dict[str, Any]:
        """Its settings of ``group`` (defaults filled in) checked.

        Args:
            group: The group's settings, its own among them.
            where: Name of the group for messages, e.g. ``'views[1]'``.

        Returns:
            The checked values of :attr:`defaults`' keys.

        Raises:
            ValueError: Naming the setting, its value and what is allowed.
        """
        return {k: group[k] for k in self.defaults}

    def enabled(self, group: Dict[str, Any]) -> bool:
        """Whether it can change a view of this (checked) group at all.

        Args:
            group: A checked group.
        """
        return True

    def recipe(self, group: Dict[str, Any]) -> Dict[str, Any]:
        """Its rows of the recipe tables for this (checked) group: its
        recorded settings, then :attr:`recipe_extra`. Default: the
        settings as they are, no extra row.

        Args:
            group: A checked group.
        """
        return {k: group[k] for k in self.defaults
                if k not in self.unrecorded}

    def absent_recipe(self) -> Dict[str, Any]:
        """Its rows of a per-sample pipeline that has none of its
        transforms: the rows of its defaults, updated by :attr:`absent`."""
        rows = self.recipe(self.check(dict(self.defaults), 'defaults'))
        rows.update(self.absent)
        return rows

    def transform_recipe(self, transform: dict) -> Optional[Dict[str, Any]]:
        """The rows that one per-sample transform of a pipeline sets, if it
        is one of this augmentation's (mmpretrain's and mmcv's transform
        configs). Default: none is.

        Args:
            transform: A transform config dict.

        Returns:
            Some of its rows, or None if the transform is not its.
        """
        return None
