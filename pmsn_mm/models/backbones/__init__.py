"""Backbones: the MSN ViT (patch-drop), the data2vec vision ViT and timm
models with their own pooling."""
from .data2vec_vit import Data2VecViT
from .msn_vit import MSNViT
from .timm_backbone import PooledTIMMBackbone

__all__ = ['Data2VecViT', 'MSNViT', 'PooledTIMMBackbone']
