"""Backbones: the data2vec vision ViT."""
from .data2vec_vit import Data2VecViT

__all__ = ['Data2VecViT']
