"""Sample datasets in their real on-disk formats (not imported by
``import pmsn_mm``): ``make_sample_data(root)``.

It stays in the package although one tool runs it
(``tools/dataset_converters/make_sample_data.py``): it is user-facing, the
documented way to get the files every shipped config reads and so to try
any command offline (docs/data.md, the API reference), and docs/data.md
names :func:`expected_rgb` as the reference decoding of those files.
"""
from .images import KINDS, class_image, expected_rgb, truncate, write_image
from .layouts import FORMATS, make_sample_data

__all__ = ['KINDS', 'FORMATS', 'class_image', 'expected_rgb', 'truncate',
           'write_image', 'make_sample_data']
