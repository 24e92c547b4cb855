"""VICReg expander (neck)."""
from collections import OrderedDict
from typing import Optional, Sequence, Tuple, Union

from mmengine.model import BaseModule
from mmpretrain.registry import MODELS
from torch import Tensor, nn


@MODELS.register_module()
class VICRegExpander(BaseModule):
    """MLP expander of VICReg (``Projector`` in the official
    ``main_vicreg.py``, facebookresearch/vicreg).

    For ``channels=(8192, 8192, 8192)`` (the default, official
    ``--mlp 8192-8192-8192``)::

        fc0: Linear(in, 8192) -> bn0 -> relu0 -> fc1: Linear(8192, 8192)
        -> bn1 -> relu1 -> fc2: Linear(8192, 8192, bias=False)

    i.e. every layer but the last is Linear + BatchNorm1d + ReLU, the last is
    a plain Linear without bias. Layer names contain ``bn``/``bias`` so that
    the usual LARS ``paramwise_cfg`` keys exclude them. For SyncBN use
    mmengine's ``sync_bn='torch'`` runner option (the official code converts
    every BatchNorm to SyncBatchNorm). Weights keep PyTorch's default
    initialisation, as in the official code.

    Input: a backbone output tuple (its last element is used) or a tensor,
    of shape (B, C), or (B, C, H, W), e.g. a ResNet feature map, which is
    global-average-pooled first.

    Output: a tuple with one Tensor of shape (B, channels[-1]) (mmpretrain
    neck convention).

    Args:
        in_channels: Backbone feature dim C (2048 for ResNet-50).
        channels: Output widths of the layers; at least one. Defaults to
            ``(8192, 8192, 8192)``.
        init_cfg: mmengine init config. Defaults to None (PyTorch init).
    """

    def __init__(self,
                 in_channels: int,
                 channels: Sequence[int] = (8192, 8192, 8192),
                 init_cfg: Optional[Union[dict, list]] = None) -> None:
        super().__init__(init_cfg=init_cfg)
        channels = tuple(channels)
        if not channels:
            raise ValueError('channels must list at least one layer width, '
                             'e.g. (8192, 8192, 8192).')
        for name, value in (('in_channels', in_channels),
                            *((f'channels[{i}]', c)
                              for i, c in enumerate(channels))):
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 1:
                raise ValueError(f'{name} must be an int >= 1 but is '
                                 f'{value!r}.')
        widths = (in_channels, ) + channels
        layers = OrderedDict()
        last = len(channels) - 1
        for i in range(last):
            layers[f'fc{i}'] = nn.Linear(widths[i], widths[i + 1])
            layers[f'bn{i}'] = nn.BatchNorm1d(widths[i + 1])
            layers[f'relu{i}'] = nn.ReLU(inplace=True)
        layers[f'fc{last}'] = nn.Linear(widths[last], widths[last + 1],
                                        bias=False)
        self.mlp = nn.Sequential(layers)
        self.out_channels = channels[-1]

    def forward(self, x: Union[Tensor, Sequence[Tensor]]) -> Tuple[Tensor]:
        """Expand backbone features.

        Args:
            x: Tensor of shape (B, C) or (B, C, H, W), or a tuple/list of
                them (the last is used).

        Returns:
            Tuple with one Tensor of shape (B, channels[-1]).
        """
        if isinstance(x, (tuple, list)):
            x = x[-1]
        if x.dim() == 4:
            x = x.mean(dim=(2, 3))
        elif x.dim() != 2:
            raise ValueError(
                'VICRegExpander input must have shape (B, C) or (B, C, H, W), '
                f'but has shape {tuple(x.shape)}.')
        return (self.mlp(x), )
