"""Helpers for the analysis tools: the datasets of a training config (the
model is built with ``mmpretrain.apis.get_model``; features with
``pmsn_mm.evaluation.functional.extract_features``, which calls the
model's ``extract_feat``).

Not imported by ``pmsn_mm/__init__.py`` (it pulls in mmcv's image I/O); use
``import pmsn_mm.apis``.
"""
from .inference import (build_dataset, dataset_config, dataset_labels,
                        load_image)

__all__ = ['build_dataset', 'dataset_config', 'dataset_labels', 'load_image']
