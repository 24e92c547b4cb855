"""Backbones: the MSN ViT (patch-drop) and the data2vec vision ViT."""
from .data2vec_vit import Data2VecViT
from .msn_vit import MSNViT

__all__ = ['Data2VecViT', 'MSNViT']
