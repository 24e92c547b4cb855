"""Collate images of mixed sizes into one padded uint8 tensor."""
from typing import List, Sequence

import torch
from mmengine.dataset import default_collate
# mmpretrain has no FUNCTIONS registry of its own: mmengine's is searched
from mmengine.registry import FUNCTIONS


@FUNCTIONS.register_module()
def padded_collate(data_batch: Sequence[dict],
                   sample_keys: Sequence[str] = ()) -> dict:
    """``default_collate``, except that ``inputs`` of different sizes are
    packed into one tensor of the largest height and width, each image in
    the top-left corner (zeros elsewhere), and that the data-sample fields
    named in ``sample_keys`` are also stacked into batch tensors.

    For ``BatchAugmentPreprocessor``'s decode-only loader: one tensor per
    batch (one host-to-device copy), sizes in ``img_shapes`` (long (B, 2)).

    Args:
        data_batch: Packed samples, ``dict(inputs=(C, H_i, W_i), ...)``.
        sample_keys: Data-sample fields (tensors of one shape) to stack
            into ``batch[key]`` (B, ...) too (``BatchCastPreprocessor``).

    Returns:
        ``dict(inputs=Tensor (B, C, H, W), data_samples=[...])``, plus
        ``img_shapes`` for a padded batch and each of ``sample_keys``.
    """
    if isinstance(sample_keys, str):
        raise TypeError(f'sample_keys must be a list of field names, got '
                        f'{sample_keys!r}.')
    stacked = {}
    for key in sample_keys:
        missing = [i for i, item in enumerate(data_batch)
                   if key not in item['data_samples']]
        if missing:
            raise KeyError(f'padded_collate sample_keys: sample {missing[0]} '
                           f'has no data-sample field {key!r}.')
        stacked[key] = torch.stack(
            [torch.as_tensor(item['data_samples'].get(key))
             for item in data_batch])
    inputs: List[torch.Tensor] = [item['inputs'] for item in data_batch]
    shapes = {tuple(x.shape) for x in inputs}
    if len(shapes) == 1:
        return dict(default_collate(data_batch), **stacked)
    channels = {x.shape[0] for x in inputs}
    if len(channels) != 1:
        raise ValueError(f'padded_collate needs one channel count per batch, '
                         f'got {sorted(channels)}.')
    height = max(x.shape[1] for x in inputs)
    width = max(x.shape[2] for x in inputs)
    packed = inputs[0].new_zeros((len(inputs), channels.pop(), height,
                                  width))
    for i, x in enumerate(inputs):
        packed[i, :, :x.shape[1], :x.shape[2]] = x
    rest = default_collate([{k: v for k, v in item.items() if k != 'inputs'}
                            for item in data_batch])
    img_shapes = torch.tensor([tuple(x.shape[1:]) for x in inputs],
                              dtype=torch.long)
    return dict(rest, inputs=packed, img_shapes=img_shapes, **stacked)
