"""PSwAV configs keep the SwAV settings of mmpretrain's recipe (every config
trains on real files in test_every_config_runs.py)."""
import glob
import os.path as osp

from mmengine.config import Config

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
    assert inat.train_dataloader.dataset.type == 'INat18'
    assert inat.train_dataloader.dataset.split == 'train'
    assert inat.train_dataloader.dataset.data_root == 'data/inat18/'
    views = inat.model.data_preprocessor.views
    assert [(v.num_views, v.size) for v in views] == [(2, 224), (6, 96)]
