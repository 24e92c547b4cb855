"""Datasets and prototype probabilities of a trained model for the analysis
tools (load the model with ``mmpretrain.apis.get_model``)."""
import copy
from typing import Dict, Optional

import mmcv
import numpy as np
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from torch import Tensor, nn
from torch.utils.data import Dataset

from pmsn_mm.evaluation.functional import last_output
from pmsn_mm.models.heads import prototype_log_probabilities


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
            background=np.asarray(dataset.get_background_labels()))
    try:
        return dict(gt_label=np.asarray(dataset.get_gt_labels()))
    except (AttributeError, KeyError, TypeError):
        return {}


def load_image(dataset: Dataset, index: int) -> np.ndarray:
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


def prototype_matrix(model: nn.Module) -> Tensor:
    """The prototypes of a prototype model, shape (K, D): ``head.prototypes``
    (PMSN) or the loss's ``prototypes.weight`` (SwAV, PSwAV).

    Args:
        model: A PMSN- or SwAV-style model.

    Returns:
        Tensor of shape (K, D) (the parameter itself).
    """
    prototypes = getattr(model.head, 'prototypes', None)
    if prototypes is None:
        layer = getattr(model.head.loss_module, 'prototypes', None)
        prototypes = getattr(layer, 'weight', None)
    if not isinstance(prototypes, Tensor):
        raise AttributeError(
            f'{type(model).__name__} has neither head.prototypes (PMSN) nor '
            'head.loss_module.prototypes.weight (SwAV).')
    return prototypes


def neck_embeddings(model: nn.Module, feats: Tensor) -> Tensor:
    """Embeddings compared with the prototypes, from pooled backbone
    features: ``neck(feats)`` (last output) for necks on feature vectors
    (``MSNProjector``); ``SwAVNeck`` pools inside its ``forward``, so its
    projection (``forward_projection``) is applied to the pooled features.

    Args:
        model: A model with a ``neck``.
        feats: Tensor of shape (B, C), pooled last backbone output.

    Returns:
        Tensor of shape (B, D).
    """
    projection = getattr(model.neck, 'forward_projection', None)
    if projection is not None:
        return projection(feats)
    return last_output(model.neck(feats))


@torch.no_grad()
def prototype_probabilities(model: nn.Module, embeddings: Tensor) -> Tensor:
    """Prototype probabilities of neck embeddings: the head's
    ``probabilities`` (PMSN: as in the loss); for SwAV-style models the
    predicted assignments ``softmax(cos / temperature)`` of the loss.

    Args:
        model: A PMSN model, or a SwAV-style one (see
            :func:`prototype_matrix`, ``head.loss_module.temperature``).
        embeddings: Tensor of shape (N, D).

    Returns:
        Tensor of shape (N, K), float32 on the CPU.
    """
    head = model.head
    if hasattr(head, 'probabilities'):
        return head.probabilities(
            embeddings.to(head.prototypes.device,
                          head.prototypes.dtype)).float().cpu()
    prototypes = prototype_matrix(model).detach().float().cpu()
    return prototype_log_probabilities(embeddings.float().cpu(), prototypes,
                                       head.loss_module.temperature).exp()


def cluster_prior(model: nn.Module) -> nn.Module:
    """The cluster prior module of a prototype model: ``head.prior``
    (PMSN) or the loss's ``prior`` (PSwAV).

    Args:
        model: A PMSN or PSwAV model.

    Returns:
        The ``BasePrior``.
    """
    prior = getattr(model.head, 'prior', None)
    if prior is None:
        prior = getattr(model.head.loss_module, 'prior', None)
    if prior is None:
        raise AttributeError(f'{type(model).__name__} has neither head.prior '
                             '(PMSN) nor head.loss_module.prior (PSwAV).')
    return prior


def prior_probabilities(model: nn.Module) -> Tensor:
    """The prior over the model's K prototypes, float64 on the CPU.

    Args:
        model: A PMSN or PSwAV model.

    Returns:
        Tensor of shape (K,).
    """
    return cluster_prior(model).probs(
        prototype_matrix(model).shape[0], torch.device('cpu'), torch.float64)
