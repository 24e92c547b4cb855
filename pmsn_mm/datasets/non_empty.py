"""A clear error when a dataset loads no samples, or too few for a batch.

mmengine accepts an empty annotation list or an ``indices`` that selects
nothing, and fails later, far from the cause. Datasets that inherit
:class:`NonEmptyDatasetMixin` first raise an error naming the dataset type,
``data_root``, ``split``, annotation file and the setting that emptied it.
"""
from typing import Any, List, Optional, Sequence, Union, cast


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


def selects_nothing(indices: Optional[Union[int, Sequence[int]]]) -> bool:
    """Whether ``indices`` keeps no sample of a non-empty data list.

    Only ``0`` and an empty sequence leave nothing.

    Args:
        indices: The dataset's ``indices`` argument (None: every sample).
    """
    if indices is None:
        return False
    if isinstance(indices, int):
        return indices == 0
    return len(indices) == 0


def empty_subset_message(dataset, num_kept: int, filtered: bool) -> str:
    """The error text for an ``indices`` setting that selects no sample.

    Args:
        dataset: The dataset (an mmengine ``BaseDataset``).
        num_kept: Samples there were to select from.
        filtered: Whether ``filter_cfg`` removed samples before.
    """
    after = ' left after filter_cfg' if filtered else ''
    indices = getattr(dataset, '_indices', None)
    return (f'{type(dataset).__name__} is empty ({dataset_fields(dataset)}): '
            f'indices={indices!r} selects none of its {num_kept} '
            f'samples{after}. Set indices to None (every sample), a count '
            'of samples (first n, or last n if negative) or a non-empty '
            'list of sample indices.')


def check_has_batches(loader, name: str = 'train_dataloader') -> None:
    """Refuse a dataloader whose epoch holds no batch (small dataset, large
    batch, ``drop_last=True``), naming the numbers, before mmengine fails
    far from the cause (``epoch_length must be a positive integer``).

    Args:
        loader: A built ``torch.utils.data.DataLoader``.
        name: Its config key, for the message.

    Raises:
        ValueError: If ``len(loader) == 0``.
    """
    if len(loader) > 0:
        return
    from mmengine.dist import get_world_size
    dataset = loader.dataset
    batch = loader.batch_size
    if batch is None:  # a batch sampler sets it
        batch = getattr(loader.batch_sampler, 'batch_size', None)
    world = get_world_size()
    drop = ' with drop_last=True' if loader.drop_last else ''
    raise ValueError(
        f'{name} gives no batch: its {type(dataset).__name__} '
        f'({dataset_fields(dataset)}) has {len(dataset)} images and one '
        f'batch needs {batch} per GPU x {world} GPU(s){drop}. Lower '
        f'{name}.batch_size (e.g. --cfg-options {name}.batch_size='
        f'{max(1, len(dataset) // max(world, 1))}) or add images.')


class NonEmptyDatasetMixin:
    """Raise ``ValueError`` when the loaded (and filtered) data list is
    empty, or when the ``indices`` setting selects none of its samples.

    Put it first among the bases: ``class MyDataset(NonEmptyDatasetMixin,
    BaseDataset)``. Hooks into ``filter_data``, which ``full_init`` calls
    before it applies ``indices``, so both checks run before mmengine's
    own errors.
    """

    # set by the mmengine dataset this class is mixed into
    data_list: List[dict]

    def filter_data(self) -> List[dict]:
        """``super().filter_data()``, refusing an empty result or an
        ``indices`` setting that would empty it."""
        num_loaded = len(self.data_list)
        # the dataset's (after this class in the MRO)
        data_list = cast(Any, super()).filter_data()
        if not data_list:
            raise ValueError(empty_dataset_message(self, num_loaded))
        if selects_nothing(getattr(self, '_indices', None)):
            raise ValueError(
                empty_subset_message(self, len(data_list),
                                     len(data_list) < num_loaded))
        return data_list
