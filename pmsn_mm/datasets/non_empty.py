"""A clear error when a dataset loads no samples.

mmengine's ``BaseDataset`` accepts an empty annotation list and fails later,
far from the cause: ``need at least one array to concatenate`` (serialising
the data list) or ``ZeroDivisionError`` (``DefaultSampler``). Datasets that
inherit :class:`NonEmptyDatasetMixin` first raise an error naming the
dataset type, ``data_root``, ``split`` and annotation file.
"""
from typing import List


def dataset_fields(dataset) -> str:
    """``data_root=..., split=...[, ann_file=...]`` of a dataset.

    Args:
        dataset: The dataset (an mmengine ``BaseDataset``).
    """
    fields = [f'data_root={getattr(dataset, "data_root", None)!r}',
              f'split={getattr(dataset, "split", None)!r}']
    ann_file = getattr(dataset, 'ann_file', '')
    if ann_file:
        fields.append(f'ann_file={ann_file!r}')
    return ', '.join(fields)


def empty_dataset_message(dataset, num_loaded: int) -> str:
    """The error text for a dataset without samples.

    Args:
        dataset: The dataset (an mmengine ``BaseDataset``).
        num_loaded: Samples loaded before ``filter_cfg`` was applied.
    """
    cause = (f'all {num_loaded} loaded samples were removed by filter_cfg='
             f'{getattr(dataset, "filter_cfg", None)!r}' if num_loaded else
             'no samples were found')
    return (f'{type(dataset).__name__} is empty ({dataset_fields(dataset)}): '
            f'{cause}. Check that data_root points at the prepared dataset '
            'and that the split has images.')


class NonEmptyDatasetMixin:
    """Raise ``ValueError`` when the loaded (and filtered) data list is empty.

    Put it first among the bases: ``class MyDataset(NonEmptyDatasetMixin,
    BaseDataset)``. Hooks into ``filter_data``, which mmengine's
    ``full_init`` calls right after ``load_data_list``.
    """

    def filter_data(self) -> List[dict]:
        """``super().filter_data()``, refusing an empty result."""
        num_loaded = len(self.data_list)
        data_list = super().filter_data()
        if not data_list:
            raise ValueError(empty_dataset_message(self, num_loaded))
        return data_list
