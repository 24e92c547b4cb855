"""Frozen features: of one packed batch (:func:`batch_features`, the one
feature path of the kNN val loop, the analysis tools and the cached linear
probe) and of a whole dataset (:func:`extract_features`)."""
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Tuple, Union

import torch
from mmengine.dataset import default_collate
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from pmsn_mm.models.utils.pooling import last_output, pooled
from pmsn_mm.utils.validation import check_choice

if TYPE_CHECKING:
    from mmengine.model import BaseModel

#: Where :func:`batch_features` reads the features (``'probs'``: prototype
#: models only).
STAGES = ('backbone', 'neck', 'probs')


def batch_features(model: 'BaseModel', data: dict,
                   stage: str = 'backbone') -> Tensor:
    """Features of a ``default_collate`` batch, shape (B, D).

    Runs ``model.data_preprocessor``, takes the first view when the
    pre-processor returns a list (``SelfSupDataPreprocessor``), then the
    model's own embedding: ``model.extract_feat(inputs, stage=stage)`` for
    models with stages (PMSN, PSwAV:
    :class:`~pmsn_mm.models.selfsup.PrototypeEmbedMixin`); for other
    mmpretrain models the last output of ``model.extract_feat`` (and of
    ``model.neck`` on it for ``'neck'``), average-pooling 4-D maps. Call
    under ``no_grad``.

    Args:
        model: An mmpretrain model (e.g. PMSN) in the desired mode.
        data: A collated batch with ``inputs`` and ``data_samples``.
        stage: ``'backbone'``, ``'neck'`` or ``'probs'`` (prototype
            probabilities; prototype models only).

    Returns:
        Tensor of shape (B, D).
    """
    inputs = model.data_preprocessor(data, False)['inputs']
    inputs = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    if hasattr(model, 'embed'):
        return model.extract_feat(inputs, stage=stage)
    if stage == 'probs':
        raise ValueError(
            f"stage='probs' needs a prototype model (PMSN, PSwAV), but the "
            f'model is {type(model).__name__}.')
    out = last_output(model.extract_feat(inputs))
    if stage == 'neck':
        out = last_output(model.neck(out))
    return pooled(out)


def sample_label(sample: Any, key: str) -> int:
    """The integer label ``key`` of a packed data sample (``gt_label`` or a
    metainfo field such as the toy set's ``digit_label``).

    Args:
        sample: A ``DataSample`` (or a dict).
        key: The label's field name.

    Returns:
        int.
    """
    value = sample.get(key) if hasattr(sample, 'get') else None
    if value is None:
        raise KeyError(
            f"label '{key}' is not in the packed data samples; keep it in "
            "the pipeline's PackInputs (gt_label, or meta_keys=(...)).")
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"'{key}' must hold one class label per sample, "
                             f'got a tensor of shape {tuple(value.shape)}.')
        return int(value.reshape(-1)[0])
    return int(value)


@torch.no_grad()
def extract_features(
        model: nn.Module,
        data: Union[Dataset, DataLoader],
        stage: str = 'backbone',
        label_keys: Sequence[str] = (),
        batch_size: int = 64,
        num_workers: int = 0,
        progress: bool = False) -> Tuple[Tensor, Dict[str, Tensor]]:
    """:func:`batch_features` of every batch, in order.

    Args:
        model: A model in the desired (usually eval) mode.
        data: A dataset whose pipeline packs ``inputs`` (a test pipeline;
            batched here, unshuffled), or a ``DataLoader`` (in index order
            for features in dataset order).
        stage: One of :data:`STAGES`.
        label_keys: Labels to collect from the data samples (see
            :func:`sample_label`).
        batch_size: Batch size when ``data`` is a dataset.
        num_workers: DataLoader workers when ``data`` is a dataset.
        progress: Show a tqdm progress bar.

    Returns:
        Features of shape (N, D) (float32, CPU) and ``{key: LongTensor of
        shape (N,)}`` for every label key.
    """
    check_choice('stage', stage, STAGES)
    if not isinstance(data, DataLoader):
        data = DataLoader(
            data,
            batch_size=batch_size,
            shuffle=False,
            num_workers=num_workers,
            collate_fn=default_collate)
    feats: List[Tensor]
    labels: Dict[str, List[int]]
    feats, labels = [], {key: [] for key in label_keys}
    for batch in tqdm(data, desc=f'{stage} features', disable=not progress):
        feats.append(batch_features(model, batch, stage).float().cpu())
        for key in label_keys:
            labels[key] += [
                sample_label(s, key) for s in batch['data_samples']
            ]
    return torch.cat(feats) if feats else torch.zeros(0), {
        k: torch.tensor(v, dtype=torch.long)
        for k, v in labels.items()
    }
