"""Cluster priors for PMSN: uniform (MSN), power-law, class counts, file."""
from .base_prior import BasePrior, validate_prior_values
from .class_prior import ClassPrior
from .file_prior import FilePrior, load_prior_file
from .power_law import PowerLawPrior
from .uniform import UniformPrior

__all__ = [
    'BasePrior', 'ClassPrior', 'FilePrior', 'PowerLawPrior', 'UniformPrior',
    'load_prior_file', 'validate_prior_values'
]
