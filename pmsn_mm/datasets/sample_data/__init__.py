"""Sample datasets in their real on-disk formats (not imported by
``import pmsn_mm``): ``make_sample_data(root)``."""
from .images import KINDS, class_image, expected_rgb, truncate, write_image
from .layouts import FORMATS, make_sample_data

__all__ = ['KINDS', 'FORMATS', 'class_image', 'expected_rgb', 'truncate',
           'write_image', 'make_sample_data']
