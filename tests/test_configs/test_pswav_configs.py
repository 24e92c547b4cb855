"""Every PSwAV config builds (model, dataset, prior); the SwAV settings of
mmpretrain's recipe are kept."""
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmpretrain.registry import DATASETS, MODELS
from tests._configs import CONFIGS

PSWAV_CONFIGS = sorted(glob.glob(osp.join(CONFIGS, 'pswav', '*.py')))


def _fake_layout(root) -> str:
    """An annotation list in the ImageNet/iNat layouts (images not read)."""
    (root / 'meta').mkdir()
    (root / 'meta' / 'train.txt').write_text(
        'train/a/1.jpg 0\ntrain/a/2.jpg 0\ntrain/b/1.jpg 1\n')
    return str(root)


def test_there_are_pswav_configs():
    names = {osp.basename(p) for p in PSWAV_CONFIGS}
    for part in ('cpu_shapes-digits-power-law', 'in1k-uniform',
                 'in1k-power-law', 'inat18-uniform', 'inat18-power-law',
                 'inat18-class-prior'):
        assert any(part in n for n in names), part


@pytest.mark.parametrize('path', PSWAV_CONFIGS, ids=osp.basename)
def test_config_builds(path, tmp_path):
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(path)
    assert cfg.custom_imports.imports == ['pmsn_mm']
    root = _fake_layout(tmp_path)
    ds = cfg.train_dataloader.dataset
    if ds.type == 'PowerLawOverlayDataset':
        ds.num_samples = 16
    else:
        ds.data_root = root
    prior_cfg = cfg.model.head.loss.prior
    if prior_cfg.type == 'ClassPrior':
        prior_cfg.dataset.data_root = root
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == 'PSwAV'
    loss = model.head.loss_module
    assert type(loss).__name__ == 'PSwAVLoss'
    assert len(DATASETS.build(ds)) > 0
    k = loss.num_prototypes
    assert loss.prototypes.weight.shape == (k, cfg.model.neck.out_channels)
    if prior_cfg.type == 'ClassPrior':
        assert loss.prior.counts.shape == (2, )  # the fake list's classes
    else:
        probs = loss.prior_probs(k, torch.device('cpu'), torch.float64)
        assert probs.shape == (k, )
        assert float(probs.sum()) == pytest.approx(1.0)


def test_swav_recipe_is_kept():
    power = Config.fromfile(
        osp.join(CONFIGS, 'pswav',
                 'pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-power-law.py'))
    loss = power.model.head.loss
    assert loss.type == 'PSwAVLoss' and loss.num_prototypes == 3000
    assert loss.epsilon == 0.05 and loss.temperature == 0.1
    assert loss.num_crops == [2, 6] and loss.feat_dim == 128
    assert loss.prior == dict(type='PowerLawPrior', tau=0.25)
    hook = [h for h in power.custom_hooks if h.type == 'SwAVHook'][0]
    assert hook.queue_length == 3840 and hook.epoch_queue_starts == 15
    inat = Config.fromfile(
        osp.join(CONFIGS, 'pswav',
                 'pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-power-law.py'))
    assert inat.model.head.loss.num_prototypes == 8142
    assert inat.train_dataloader.dataset.ann_file == 'meta/train.txt'
    assert inat.train_dataloader.dataset.data_root == 'data/inat18/'
    assert inat.train_dataloader.dataset.pipeline[1].num_views == [2, 6]
