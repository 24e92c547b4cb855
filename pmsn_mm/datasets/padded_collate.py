"""Collate images of mixed sizes into one padded uint8 tensor."""
from typing import List, Sequence

import torch
from mmengine.dataset import default_collate
# mmpretrain has no FUNCTIONS registry of its own: mmengine's is searched
from mmengine.registry import FUNCTIONS


@FUNCTIONS.register_module()
def padded_collate(data_batch: Sequence[dict]) -> dict:
    """``default_collate``, except that ``inputs`` of different sizes are
    packed into one tensor of the largest height and width, each image in
    the top-left corner (zeros elsewhere).

    For the decode-only loader of ``BatchAugmentPreprocessor``: one
    contiguous tensor per batch (one host-to-device copy), each image's
    size in its data sample's ``img_shape`` (``PackInputs`` keeps it), from
    which the pre-processor draws crops in the image's own coordinates.

    Args:
        data_batch: Packed samples, ``dict(inputs=Tensor (C, H_i, W_i),
            data_samples=...)``.

    Returns:
        ``dict(inputs=Tensor (B, C, H, W), data_samples=[...])``.
    """
    inputs: List[torch.Tensor] = [item['inputs'] for item in data_batch]
    shapes = {tuple(x.shape) for x in inputs}
    if len(shapes) == 1:
        return default_collate(data_batch)
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
    return dict(rest, inputs=packed)
