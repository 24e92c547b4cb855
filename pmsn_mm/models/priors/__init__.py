"""Cluster priors for PMSN: uniform (MSN), power-law, class counts, file, a
power law whose exponent is fitted to the data, and an image folder's (class
counts or a given prior)."""
from .adaptive_power_law import AdaptivePowerLawPrior, fit_power_law_exponent
from .base_prior import BasePrior, validate_prior_values
from .class_prior import ClassPrior
from .file_prior import FilePrior, load_prior_file
from .image_folder_prior import image_folder_prior
from .power_law import PowerLawPrior
from .uniform import UniformPrior

__all__ = [
    'AdaptivePowerLawPrior', 'BasePrior', 'ClassPrior', 'FilePrior',
    'PowerLawPrior', 'UniformPrior',
    'fit_power_law_exponent', 'image_folder_prior', 'load_prior_file',
    'validate_prior_values'
]
