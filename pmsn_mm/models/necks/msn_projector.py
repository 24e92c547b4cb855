"""MSN projection head (neck)."""
from collections import OrderedDict
from typing import List, Optional, Tuple, Union

from mmengine.model import BaseModule
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ...utils.validation import check_int


@MODELS.register_module()
class MSNProjector(BaseModule):
    """3-layer MLP projector of MSN (official ``init_model``).

    ``fc1 -> bn1 -> gelu1 -> fc2 -> bn2 -> gelu2 -> fc3`` (official names).
    Input: a tuple (last element used) or a tensor (B, C) or (B, C, H, W)
    (pooled). Output: a tuple with one Tensor (B, out_channels).

    Args:
        in_channels: Backbone feature dim C.
        hidden_channels: Hidden width. Defaults to 2048.
        out_channels: Output dim D. Defaults to 256.
        with_bn: Use BatchNorm1d after fc1 and fc2. Defaults to True.
        init_cfg: mmengine init config. Defaults to truncated-normal
            Linear weights (std 0.02) with zero biases.
    """

    def __init__(self,
                 in_channels: int,
                 hidden_channels: int = 2048,
                 out_channels: int = 256,
                 with_bn: bool = True,
                 init_cfg: Optional[Union[dict, list]] = None) -> None:
        if init_cfg is None:
            init_cfg = dict(
                type='TruncNormal', layer='Linear', std=0.02, bias=0.0)
        super().__init__(init_cfg=init_cfg)
        in_channels = check_int('MSNProjector in_channels', in_channels, 1)
        hidden_channels = check_int('MSNProjector hidden_channels',
                                    hidden_channels, 1)
        out_channels = check_int('MSNProjector out_channels', out_channels, 1)
        layers: 'OrderedDict[str, nn.Module]' = OrderedDict()
        layers['fc1'] = nn.Linear(in_channels, hidden_channels)
        if with_bn:
            layers['bn1'] = nn.BatchNorm1d(hidden_channels)
        layers['gelu1'] = nn.GELU()
        layers['fc2'] = nn.Linear(hidden_channels, hidden_channels)
        if with_bn:
            layers['bn2'] = nn.BatchNorm1d(hidden_channels)
        layers['gelu2'] = nn.GELU()
        layers['fc3'] = nn.Linear(hidden_channels, out_channels)
        self.mlp = nn.Sequential(layers)

    def forward(
        self, x: Union[Tensor, Tuple[Tensor, ...], List[Tensor]]
    ) -> Tuple[Tensor]:
        """Project backbone features.

        Args:
            x: Tensor (B, C) or (B, C, H, W), or a tuple of them (last used).

        Returns:
            Tuple with one Tensor of shape (B, out_channels).
        """
        if isinstance(x, (tuple, list)):
            x = x[-1]
        if x.dim() == 4:
            x = x.mean(dim=(2, 3))
        elif x.dim() != 2:
            raise ValueError(
                'MSNProjector input must have shape (B, C) or (B, C, H, W), '
                f'but has shape {tuple(x.shape)}.')
        return (self.mlp(x), )
