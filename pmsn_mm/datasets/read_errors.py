"""Unreadable image files: errors that also name the dataset."""
from typing import Any, cast

from .non_empty import dataset_fields
from .transforms.loading import ImageReadError


class NamedReadErrorsMixin:
    """Prefix the dataset (type, ``data_root``, split) to the error of an
    image that cannot be read (:class:`ImageReadError`, a missing file).

    Put it first among the bases of an mmengine ``BaseDataset`` subclass;
    hooks into ``prepare_data``, the step that runs the pipeline.
    """

    def prepare_data(self, idx: int) -> Any:
        """``super().prepare_data(idx)``, naming the dataset on failure.

        Args:
            idx: Index of the sample.
        """
        try:
            # the dataset's (after this class in the MRO)
            return cast(Any, super()).prepare_data(idx)
        except (ImageReadError, FileNotFoundError) as e:
            raise type(e)(f'{type(self).__name__} ({dataset_fields(self)}): '
                          f'{e}') from e
