"""A timm model as a backbone that returns its own pooled feature (the CLS
token of a ViT), with MSN's patch-drop for token models."""
from typing import Any, Optional, Tuple, cast

import torch
from mmpretrain.models.backbones.base_backbone import BaseBackbone
from mmpretrain.registry import MODELS
from torch import Tensor, nn

from ..utils.patch_drop import PatchDrop, check_mask_ratio


@MODELS.register_module()
class PooledTIMMBackbone(BaseBackbone):
    """Any timm model, returning its pooled pre-logits feature (B, C).

    The model's own ``forward_head(pre_logits=True)`` pools, so necks get
    (B, C); kept instead of mmpretrain's ``TIMMBackbone``, whose reset
    pooling gives a ViT's (B, 1 + N, C). A token model's ``forward`` takes
    MSN's ``mask_ratio`` (:class:`~pmsn_mm.models.utils.PatchDrop`); others
    (:attr:`supports_mask_ratio` False) refuse ``mask_ratio > 0``.

    Args:
        model_name: timm model name, e.g. ``'vit_small_patch16_224'``.
        pretrained: Download timm's pretrained weights. Defaults to False.
        checkpoint_path: Local weights for timm. Defaults to '' (none).
        in_channels: Image channels. Defaults to 3.
        keep_spatial_dims: Return (B, C, 1, 1) instead of (B, C), for necks
            that average-pool a feature map (``SwAVNeck``). Defaults to False.
        model_kwargs: Further arguments of ``timm.create_model``
            (``features_only`` is refused). A dict rather than ``**kwargs``,
            so that the config-key check names a misspelled key here.
        init_cfg: mmengine init config. Defaults to None (timm's init).

    Example:
        >>> backbone = dict(type='PooledTIMMBackbone',
        ...                 model_name='vit_small_patch16_224',
        ...                 model_kwargs=dict(dynamic_img_size=True))
    """

    def __init__(self,
                 model_name: str,
                 pretrained: bool = False,
                 checkpoint_path: str = '',
                 in_channels: int = 3,
                 keep_spatial_dims: bool = False,
                 model_kwargs: Optional[dict] = None,
                 init_cfg: Optional[dict] = None) -> None:
        import timm
        if model_kwargs is None:
            model_kwargs = {}
        if not isinstance(model_kwargs, dict):
            raise ValueError('PooledTIMMBackbone model_kwargs must be a dict '
                             f'but is {model_kwargs!r}.')
        if model_kwargs.get('features_only'):
            raise ValueError(
                'PooledTIMMBackbone features_only must be False (it returns '
                "the model's pooled feature); use mmpretrain's TIMMBackbone "
                'for feature pyramids.')
        if not isinstance(pretrained, bool):
            raise ValueError('PooledTIMMBackbone pretrained must be one of '
                             f'(True, False) but is {pretrained!r}.')
        if not isinstance(keep_spatial_dims, bool):
            raise ValueError('PooledTIMMBackbone keep_spatial_dims must be '
                             'one of (True, False) but is '
                             f'{keep_spatial_dims!r}.')
        super().__init__(init_cfg)
        self.model_name = model_name
        self.keep_spatial_dims = keep_spatial_dims
        # timm types it nn.Module; its model-specific attributes are untyped
        self.timm_model: Any = cast(Any, timm.create_model(
            model_name,
            pretrained=pretrained,
            checkpoint_path=checkpoint_path,
            in_chans=in_channels,
            **model_kwargs))
        # drop the classifier, keep the model's pooling (global_pool=None)
        self.timm_model.reset_classifier(0)
        if pretrained or checkpoint_path:
            self._is_init = True  # mmengine must not re-initialise them
        self.supports_mask_ratio = isinstance(
            getattr(self.timm_model, 'patch_drop', None), nn.Module) and \
            hasattr(self.timm_model, 'num_prefix_tokens')
        if self.supports_mask_ratio:
            self.patch_drop = PatchDrop(self.timm_model.num_prefix_tokens)
            self.timm_model.patch_drop = nn.Sequential(
                self.timm_model.patch_drop, self.patch_drop)

    @property
    def out_channels(self) -> int:
        """Width C of the pooled feature (timm's ``num_features``)."""
        return int(self.timm_model.num_features)

    def forward(self,
                x: Tensor,
                mask_ratio: float = 0.0,
                generator: Optional[torch.Generator] = None
                ) -> Tuple[Tensor]:
        """Encode images into the model's pooled feature.

        Args:
            x: Tensor of shape (B, in_channels, H, W).
            mask_ratio: Patch tokens dropped (token models only), in [0, 1).
            generator: Optional ``torch.Generator`` (``x.device``) of the draw.

        Returns:
            Tuple with one Tensor of shape (B, C) ((B, C, 1, 1) with
            ``keep_spatial_dims``).
        """
        mask_ratio = check_mask_ratio(mask_ratio)
        if mask_ratio == 0:
            return self._pooled(x)
        if not self.supports_mask_ratio:
            raise ValueError(
                f'mask_ratio={mask_ratio} needs a timm model with patch '
                f'tokens (a VisionTransformer), but {self.model_name!r} has '
                'none; set mask_ratio=0.')
        self.patch_drop.mask_ratio = mask_ratio
        self.patch_drop.generator = generator
        try:
            return self._pooled(x)
        finally:
            self.patch_drop.mask_ratio, self.patch_drop.generator = 0.0, None

    def _pooled(self, x: Tensor) -> Tuple[Tensor]:
        feat = self.timm_model(x)
        if feat.dim() != 2:
            raise ValueError(
                f'timm model {self.model_name!r} returned shape '
                f'{tuple(feat.shape)}, not (B, C): set a global_pool '
                "(e.g. 'token' or 'avg') in its arguments.")
        return (feat[:, :, None, None] if self.keep_spatial_dims else feat, )

    def extra_repr(self) -> str:
        return f'model_name={self.model_name!r}'
