"""Optimizer-wrapper constructors."""
from .skip_frozen_constructor import SkipFrozenOptimWrapperConstructor

__all__ = ['SkipFrozenOptimWrapperConstructor']
