"""PSwAV configs keep the SwAV settings of mmpretrain's recipe (every config
trains on real files in test_every_config_runs.py): PSwAVHead owns the
prototypes (num_prototypes, in_channels) and the prior, PSwAVLoss SwAV's
Sinkhorn and loss settings."""
import glob
import os.path as osp

import pytest
from mmengine.config import Config
from mmpretrain.registry import MODELS

from pmsn_mm.models.heads import PSwAVHead
from pmsn_mm.models.priors import ClassPrior, PowerLawPrior, UniformPrior
from tests._configs import CONFIGS

PSWAV_CONFIGS = sorted(glob.glob(osp.join(CONFIGS, 'pswav', '*.py')))


def test_there_are_pswav_configs():
    names = {osp.basename(p) for p in PSWAV_CONFIGS}
    for part in ('cpu_shapes-digits-power-law', 'in1k-uniform',
                 'in1k-power-law', 'inat18-uniform', 'inat18-power-law',
                 'inat18-class-prior'):
        assert any(part in n for n in names), part


def test_swav_recipe_is_kept():
    power = Config.fromfile(
        osp.join(CONFIGS, 'pswav',
                 'pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-power-law.py'))
    head = power.model.head
    assert head.type == 'PSwAVHead'
    assert head.num_prototypes == 3000 and head.in_channels == 128
    assert head.prior == dict(type='PowerLawPrior', tau=0.25)
    loss = head.loss
    assert loss.type == 'PSwAVLoss'
    assert loss.epsilon == 0.05 and loss.temperature == 0.1
    assert loss.sinkhorn_iterations == 3
    assert loss.num_crops == [2, 6] and loss.crops_for_assign == [0, 1]
    hook = [h for h in power.custom_hooks if h.type == 'SwAVHook'][0]
    assert hook.queue_length == 3840 and hook.epoch_queue_starts == 15
    inat = Config.fromfile(
        osp.join(CONFIGS, 'pswav',
                 'pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-power-law.py'))
    assert inat.model.head.num_prototypes == 8142
    assert inat.model.head.prior == dict(type='PowerLawPrior', tau=0.25)
    assert inat.train_dataloader.dataset.type == 'INat18'
    assert inat.train_dataloader.dataset.split == 'train'
    assert inat.train_dataloader.dataset.data_root == 'data/inat18/'
    views = inat.model.data_preprocessor.views
    assert [(v.num_views, v.size) for v in views] == [(2, 224), (6, 96)]


@pytest.mark.parametrize('path', PSWAV_CONFIGS, ids=osp.basename)
def test_head_owns_prototypes_and_prior(path):
    cfg = Config.fromfile(path)
    head = cfg.model.head
    assert head.type == 'PSwAVHead'
    assert 'prior' in head
    # the loss is stateless: no prototypes, no prior (the old keys are gone)
    for key in ('feat_dim', 'num_prototypes', 'prior'):
        assert key not in head.loss, key
    assert 'num_prototypes' not in head.prior  # K is set once, on the head
    # SwAVHook's queue and the neck match the head's embedding dim
    hook = [h for h in cfg.custom_hooks if h.type == 'SwAVHook'][0]
    assert hook.feat_dim == head.in_channels == cfg.model.neck.out_channels
    assert hook.crops_for_assign == head.loss.crops_for_assign
    assert list(hook.frozen_layers_cfg) == ['prototypes']
    if head.prior.type in ('ClassPrior', 'ImageFolderPrior'):
        return  # counts the classes of its data (built in the config runs)
    built = MODELS.build(head)
    assert isinstance(built, PSwAVHead)
    assert tuple(built.prototypes.shape) == (head.num_prototypes,
                                             head.in_channels)
    assert built.prior.num_prototypes == head.num_prototypes
    assert isinstance(built.prior, (UniformPrior, PowerLawPrior))
    # SwAVHook freezes the parameters whose name contains its key
    assert [n for n, _ in built.named_parameters()] == ['prototypes']


def test_class_prior_config():
    cfg = Config.fromfile(
        osp.join(
            CONFIGS, 'pswav',
            'pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-class-prior.py'))
    prior = cfg.model.head.prior
    assert prior.type == 'ClassPrior' and 'counts' not in prior
    assert prior.dataset.type == 'INat18' and prior.dataset.split == 'train'
    assert cfg.model.head.num_prototypes == 8142
    assert issubclass(MODELS.get('ClassPrior'), ClassPrior)
