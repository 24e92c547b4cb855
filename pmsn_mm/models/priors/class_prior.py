"""Class-frequency cluster prior from label counts."""
from typing import Optional, Union

from mmpretrain.registry import DATASETS, MODELS

from ...utils.labels import label_counts
from .base_prior import ArrayLike, BasePrior


@MODELS.register_module()
class ClassPrior(BasePrior):
    """Prior proportional to class counts, ``p_k = n_k / sum_j n_j``.

    Give exactly one of ``counts`` and ``dataset``. The number of classes
    must equal the number of prototypes, and every class must occur (a zero
    entry makes KL(p_mean || prior) infinite). A head with
    ``num_prototypes=None`` gets one prototype per class.

    Args:
        num_prototypes: K, given by the head; None: the number of classes.
        counts: Per-class counts or weights, shape (K,).
        dataset: A training dataset config or instance; the counts are
            its :func:`~pmsn_mm.utils.labels.label_counts`.
    """

    #: A head with ``num_prototypes=None`` takes K from this prior.
    counts_prototypes = True

    def __init__(self,
                 num_prototypes: Optional[int],
                 counts: Optional[ArrayLike] = None,
                 dataset: Optional[Union[dict, object]] = None) -> None:
        if (counts is None) == (dataset is None):
            given = 'both' if counts is not None else 'neither'
            raise ValueError('ClassPrior needs exactly one of counts and '
                             f'dataset, but got {given}.')
        if dataset is not None:
            if isinstance(dataset, dict):
                dataset = DATASETS.build(dataset)
            counts = label_counts(dataset, 'ClassPrior dataset')
            setting = 'ClassPrior dataset class counts'
        else:
            setting = 'ClassPrior counts'
        assert counts is not None  # given or counted (checked above)
        if num_prototypes is None:
            num_prototypes = len(counts)
        super().__init__(num_prototypes, counts, setting)
        self.num_classes = len(counts)

    def extra_repr(self) -> str:
        return (f'num_prototypes={self.num_prototypes}, '
                f'num_classes={self.num_classes}')
