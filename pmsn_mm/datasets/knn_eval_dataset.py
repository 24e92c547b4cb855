"""A memory (train) split and a query (test) split in one val dataset.

One dataloader pass of :class:`~pmsn_mm.evaluation.metrics.FeatureValLoop`
/ ``FeatureTestLoop`` extracts the features of both splits for
:class:`~pmsn_mm.evaluation.metrics.KNNAccuracy` (and the logistic
regressions), every sample tagged with its split. The first of the kNN
benchmark's three files (:mod:`pmsn_mm.evaluation.metrics.frozen_features`).
"""
from typing import List, Tuple, Union

from mmengine.dataset import BaseDataset
from mmpretrain.registry import DATASETS

#: Metainfo key written into every packed data sample.
KNN_ROLE_KEY = 'knn_role'
KNN_ROLES = ('memory', 'query')


@DATASETS.register_module()
class KNNEvalDataset:
    """Concatenation ``[memory samples..., query samples...]`` tagged by role.

    ``dataset[i]`` runs the wrapped pipeline (ending with ``PackInputs``;
    both should be test pipelines) and sets the metainfo field
    ``<role_key>`` to ``'memory'`` or ``'query'``; ``metainfo`` is the query's.

    Args:
        memory: Dataset (config or instance) of the memory bank (train split).
        query: Dataset (config or instance) classified, e.g. the test split.
        role_key: Metainfo key of the role. Defaults to ``'knn_role'``.
    """

    def __init__(self,
                 memory: Union[dict, BaseDataset],
                 query: Union[dict, BaseDataset],
                 role_key: str = KNN_ROLE_KEY) -> None:
        self.memory = DATASETS.build(memory) if isinstance(memory,
                                                           dict) else memory
        self.query = DATASETS.build(query) if isinstance(query,
                                                         dict) else query
        if len(self.memory) == 0 or len(self.query) == 0:
            raise ValueError(
                f'memory and query datasets must not be empty, got '
                f'{len(self.memory)} memory and {len(self.query)} query '
                'samples.')
        self.role_key = role_key

    @property
    def metainfo(self) -> dict:
        """Meta information of the query dataset."""
        return dict(getattr(self.query, 'metainfo', {}))

    def full_init(self) -> None:
        """No-op: the wrapped datasets are built in ``__init__``."""

    def __len__(self) -> int:
        return len(self.memory) + len(self.query)

    def locate(self, idx: int) -> Tuple[str, int]:
        """``(role, index into that dataset)`` of a global index.

        Args:
            idx: Index into this dataset (negative counts from the end).
        """
        if idx < 0:
            idx += len(self)
        if not 0 <= idx < len(self):
            raise IndexError(f'index {idx} out of range for {len(self)} '
                             'samples.')
        if idx < len(self.memory):
            return 'memory', idx
        return 'query', idx - len(self.memory)

    def _dataset(self, role: str):
        return self.memory if role == 'memory' else self.query

    def __getitem__(self, idx: int) -> dict:
        role, local = self.locate(idx)
        data = self._dataset(role)[local]
        samples = data.get('data_samples') if isinstance(data, dict) else None
        if samples is None or not hasattr(samples, 'set_metainfo'):
            raise ValueError(
                'KNNEvalDataset needs packed samples (a dict with '
                "'data_samples'); end the pipeline with PackInputs.")
        samples.set_metainfo({self.role_key: role})
        return data

    def get_data_info(self, idx: int) -> dict:
        """Data info of sample ``idx`` plus its role under ``role_key``.

        Args:
            idx: Index into this dataset.
        """
        role, local = self.locate(idx)
        info = dict(self._dataset(role).get_data_info(local))
        info[self.role_key] = role
        return info

    def get_roles(self) -> List[str]:
        """Role of every sample, in index order."""
        return ['memory'] * len(self.memory) + ['query'] * len(self.query)
