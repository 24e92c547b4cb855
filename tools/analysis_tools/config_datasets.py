"""Datasets of a training config for the analysis tools beside it (they load
the model with ``mmpretrain.apis.get_model``; its embeddings at every stage
come from ``model.extract_feat(inputs, stage=...)``, its prototypes and
prior from ``model.head.prototypes`` / ``model.head.prior``)."""
import copy
from typing import TYPE_CHECKING, Any, Dict, Optional, cast

import mmcv
import numpy as np
from mmengine.config import Config
from mmengine.registry import init_default_scope
from torch.utils.data import Dataset

if TYPE_CHECKING:
    from mmengine.dataset import BaseDataset


def dataset_config(cfg: Config,
                   split: Optional[str] = None,
                   num_samples: Optional[int] = None,
                   which: str = 'test') -> dict:
    """Pick a dataset config for analysis from a training config.

    Without ``split``, the kNN evaluation's datasets are used when the
    config has one (``val_dataloader.dataset`` a ``KNNEvalDataset``: its
    ``query`` for ``which='test'``, its ``memory`` for ``which='train'``);
    otherwise (or with ``split``) the training dataset with ``split=split or
    which`` and the config's ``test_pipeline`` (default ``[PackInputs]``).

    Args:
        cfg: The training config.
        split: Force this split of the training dataset.
        num_samples: Keep the first ``num_samples`` samples (``indices``).
        which: ``'train'`` or ``'test'``.

    Returns:
        A dataset config dict.
    """
    if which not in ('train', 'test'):
        raise ValueError(f"which must be 'train' or 'test', got {which!r}.")
    ds_cfg = None
    val = (cfg.get('val_dataloader', None) or {}).get('dataset', None) or {}
    if split is None and val.get('type') == 'KNNEvalDataset':
        ds_cfg = copy.deepcopy(val['memory' if which == 'train' else 'query'])
    if ds_cfg is None:
        ds_cfg = copy.deepcopy(cfg.train_dataloader.dataset)
        ds_cfg['split'] = split or which
        ds_cfg['pipeline'] = copy.deepcopy(
            cfg.get('test_pipeline', None) or [dict(type='PackInputs')])
    ds_cfg = dict(ds_cfg)
    if num_samples is not None:
        ds_cfg['indices'] = int(num_samples)
    return ds_cfg


def build_dataset(ds_cfg: dict) -> Dataset:
    """Build a dataset from its config (in the mmpretrain scope)."""
    init_default_scope('mmpretrain')
    from mmpretrain.registry import DATASETS
    return DATASETS.build(ds_cfg)


def dataset_labels(dataset: Dataset) -> Dict[str, np.ndarray]:
    """Labels to compare neighbours with: ``digit``/``background`` for the
    toy set, ``gt_label`` for other mmpretrain datasets, else none.

    Args:
        dataset: A dataset.

    Returns:
        Dict of int arrays of shape (N,).
    """
    if hasattr(dataset, 'get_digit_labels'):
        return dict(
            digit=np.asarray(dataset.get_digit_labels()),
            background=np.asarray(
                cast(Any, dataset).get_background_labels()))
    try:  # duck-typed: mmpretrain datasets have get_gt_labels
        return dict(gt_label=np.asarray(cast(Any, dataset).get_gt_labels()))
    except (AttributeError, KeyError, TypeError):
        return {}


def load_image(dataset: 'BaseDataset', index: int) -> np.ndarray:
    """The raw image of sample ``index`` as (H, W, 3) uint8 RGB.

    Args:
        dataset: A dataset with ``get_data_info`` (``img`` or ``img_path``).
        index: Sample index.

    Returns:
        Array of shape (H, W, 3).
    """
    info = dataset.get_data_info(index)
    img = info['img'] if 'img' in info else mmcv.imread(
        info['img_path'], channel_order='rgb')
    img = np.asarray(img)
    if img.ndim == 2:
        img = img[..., None]
    if img.shape[-1] == 1:
        img = np.repeat(img, 3, axis=-1)
    return img
