"""VICReg: Variance-Invariance-Covariance Regularization."""
from typing import Dict, List, Optional

from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.registry import MODELS
from mmpretrain.structures import DataSample
from torch import Tensor


@MODELS.register_module()
class VICReg(BaseSelfSupervisor):
    """VICReg (Bardes et al., ICLR 2022), as in the official
    ``VICReg.forward`` (facebookresearch/vicreg, ``main_vicreg.py``).

    Both views go through backbone and expander in separate forwards
    (BatchNorm sees one view at a time); :class:`VICRegLoss` compares them.
    The official expander (``--mlp 8192-8192-8192``) is::

        neck=dict(type='NonLinearNeck', in_channels=2048, hid_channels=8192,
                  out_channels=8192, num_layers=3, with_bias=True,
                  with_last_bn=False, with_last_bias=False,
                  with_avg_pool=True, norm_cfg=dict(type='BN1d'))

    Checkpoints of the former ``VICRegExpander`` load with ``neck.mlp.*``
    renamed to ``neck.*``.

    Args:
        backbone: Backbone config, e.g. ResNet-50.
        neck: Expander config, e.g. the ``NonLinearNeck`` above.
        loss: Loss config. Defaults to ``dict(type='VICRegLoss')``.
        **kwargs: ``BaseSelfSupervisor`` arguments (``init_cfg``, ...).
    """

    def __init__(self,
                 backbone: dict,
                 neck: dict,
                 loss: Optional[dict] = None,
                 **kwargs) -> None:
        super().__init__(backbone=backbone, neck=neck, **kwargs)
        self.loss_module = MODELS.build(
            loss if loss is not None else dict(type='VICRegLoss'))

    def loss(self, inputs: List[Tensor],
             data_samples: List[DataSample]) -> Dict[str, Tensor]:
        """VICReg loss of a batch of two-view inputs.

        Args:
            inputs: Two tensors of shape (B, C, H, W), the two views.
            data_samples: Unused (self-supervised).

        Returns:
            Losses (``loss_*``) and statistics of :class:`VICRegLoss`.
        """
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            got = len(inputs) if isinstance(inputs, (list, tuple)) else 1
            raise ValueError(
                f'VICReg needs exactly 2 views, got {got}; use MultiView with '
                'num_views=2 or [1, 1] in the pipeline.')
        z_a = self.neck(self.backbone(inputs[0]))[0]
        z_b = self.neck(self.backbone(inputs[1]))[0]
        return self.loss_module(z_a, z_b)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args,
                              **kwargs) -> None:
        # VICRegExpander kept its layers in an ``mlp`` Sequential
        old = prefix + 'neck.mlp.'
        if not hasattr(self.neck, 'mlp'):
            for key in [k for k in state_dict if k.startswith(old)]:
                state_dict[prefix + 'neck.' + key[len(old):]] = \
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
