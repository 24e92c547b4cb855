"""Move a training batch to the device in one upload per batch tensor."""
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from mmpretrain.models.utils import SelfSupDataPreprocessor
from mmpretrain.registry import MODELS
from torch import Tensor


def cast_batch(data: dict,
               device: torch.device,
               sample_keys: Sequence[str] = ()
               ) -> Tuple[Any, Optional[list], Dict[str, Tensor]]:
    """Upload what a training step needs of a collated batch.

    Kept instead of mmengine's ``cast_data`` (one blocking copy per image
    and field): each top-level tensor moves once, ``non_blocking``; of the
    data samples only ``sample_keys``, each as one stacked tensor.

    Args:
        data: ``dict(inputs=..., data_samples=..., **other_tensors)``.
        device: The model's device.
        sample_keys: Data-sample fields read in training (data2vec's ``mask``).

    Returns:
        ``(inputs, data_samples, extras)``: ``extras`` the other top-level
        tensors (and the stacked ``sample_keys``) on the device, by key.
    """

    def move(x: Tensor) -> Tensor:
        return x.to(device, non_blocking=True)

    inputs = data['inputs']
    inputs = (type(inputs)(move(x) for x in inputs) if isinstance(
        inputs, (list, tuple)) else move(inputs))
    samples = data.get('data_samples')
    extras = {
        key: move(value)
        for key, value in data.items()
        if key not in ('inputs', 'data_samples')
        and isinstance(value, Tensor)
    }
    if not sample_keys:
        return inputs, samples, extras
    if not samples:
        raise ValueError(f'sample_keys={list(sample_keys)} needs the '
                         'data samples of the batch, which has none.')
    rows: Dict[str, Sequence[Tensor]] = {}
    for key in sample_keys:
        if key not in extras:
            missing = [i for i, s in enumerate(samples) if key not in s]
            if missing:
                raise KeyError(f'sample_keys: data sample {missing[0]} has '
                               f'no field {key!r}.')
            extras[key] = move(torch.stack([s.get(key) for s in samples]))
        rows[key] = extras[key].unbind(0)
    fresh: List[Any] = []
    for i, sample in enumerate(samples):
        new = type(sample)(metainfo=sample.metainfo)
        for key in sample_keys:
            new.set_field(rows[key][i], key)
        fresh.append(new)
    return inputs, fresh, extras


@MODELS.register_module()
class BatchCastPreprocessor(SelfSupDataPreprocessor):
    """``SelfSupDataPreprocessor`` whose training batch moves to the device
    with one ``non_blocking`` upload per batch tensor (:func:`cast_batch`);
    everything else is the parent's (the BGR <-> RGB swap as a flip, not an
    index uploaded from a Python list).

    Args:
        sample_keys: Data-sample fields the model reads in training, moved
            as one stacked tensor each (data2vec: ``['mask']``).
        **kwargs: ``SelfSupDataPreprocessor`` arguments (``mean``, ...).
    """

    def __init__(self, sample_keys: Sequence[str] = (), **kwargs) -> None:
        super().__init__(**kwargs)
        if isinstance(sample_keys, str) or not all(
                isinstance(k, str) for k in sample_keys):
            raise TypeError('sample_keys must be a list of data-sample field '
                            f'names, got {sample_keys!r}.')
        self.sample_keys = tuple(sample_keys)

    def forward(self, data: dict, training: bool = False) -> dict:
        """The normalised batch (a tensor, or a list of per-view tensors).

        Args:
            data: A collated batch (``inputs`` a tensor of shape
                (B, C, H, W) or a list of them, one per view).
            training: Whether this is a training step.

        Returns:
            ``dict(inputs=..., data_samples=...)``.
        """
        if not training:
            return super().forward(
                dict(inputs=data['inputs'],
                     data_samples=data.get('data_samples')), training)
        inputs, samples, _ = cast_batch(data, self.device, self.sample_keys)
        views = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        if self._channel_conversion:  # BGR <-> RGB: channels 2, 1, 0
            views = [x[:, :3].flip(1) for x in views]
        views = [x.float() for x in views]
        if self._enable_normalize:
            views = [(x - self.mean) / self.std for x in views]
        out = list(views) if isinstance(inputs, (list, tuple)) else views[0]
        return {'inputs': out, 'data_samples': samples}
