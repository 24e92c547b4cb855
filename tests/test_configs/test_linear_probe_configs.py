"""Linear-probe configs (paper App. E.2, VISSL): settings, builds, toy runs."""
import glob
import importlib.util
import os.path as osp
import re

import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS, MODELS, TRANSFORMS
from torch.nn.modules.batchnorm import _BatchNorm

from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.datasets.sample_data.layouts import IMAGENET_WNIDS
from tests._config_runs import shrink_backbone
from tests._configs import REPO
from tests._linear_probe_toy import (BENCHMARKS, REPRESENTATIONS,
                                     save_pmsn_vit_checkpoint,
                                     save_resnet_checkpoint,
                                     write_toy_probe_config)

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

#: the linear probes (the kNN / logistic-regression configs beside them are
#: tested in test_frozen_feature_configs.py)
CONFIGS = sorted(glob.glob(osp.join(BENCHMARKS, '*-linear-*.py')))

#: dataset -> (classes, epochs, milestones or 'cos', dataset type)
DATASET_SETTINGS = {
    'in1k': (1000, 28, [8, 16, 24], 'ImageNet'),
    'inat18': (8142, 84, [24, 48, 72], 'INat18'),
    'cifar100': (100, 28, [8, 16, 24], 'CIFAR100Sorted'),
    'cifar100-1pct': (100, 28, [8, 16, 24], 'CIFAR100Sorted'),
    'in1k-1pct': (1000, 28, [8, 16, 24], 'ImageNet'),
    'places205': (205, 14, [4, 8, 12], 'Places205Sorted'),
    'clevr-count': (8, 50, 'cos', 'CLEVRCount'),
    'clevr-dist': (6, 100, 'cos', 'CLEVRDist'),
    'kitti-dist': (4, 28, [8, 16, 24], 'KITTIDist'),
}
#: representation -> feature dim
REPRESENTATION_DIMS = {
    'vit-small-p16-lastcls': 384,
    'vit-small-p16-concat4cls': 4 * 384,
    'vit-base-p16-lastcls': 768,
    'vit-base-p16-concat4cls': 4 * 768,
    'vit-large-p16-lastcls': 1024,
    'vit-large-p16-concat4cls': 4 * 1024,
    'data2vec-beit-base-p16-lastcls': 768,
    'data2vec-beit-base-p16-concat4cls': 4 * 768,
    'resnet50-pool2048': 2048,
    'resnet50-pool8192': 8192,
}
#: built full size and run on CPU (ViT-L, ViT-B: only their frozen encoder
#: and shapes, checked on the meta device by test_recipes_evaluation.py)
FULL_SIZE = ('vit-small-p16-lastcls', 'vit-small-p16-concat4cls',
             'data2vec-beit-base-p16-concat4cls', 'resnet50-pool2048',
             'resnet50-pool8192')
#: encoder of the probes -> a pretraining config whose backbone it loads
PRETRAINED_BY = {
    'resnet50': 'class_stratified/simclr_resnet50_16xb240-coslr-300e_'
                'in1k-class-balanced-k960.py',
    'vit-small-p16': 'pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py',
    'vit-base-p16': 'pmsn/pmsn_vit-base-p16_16xb64-300e_in1k-uniform.py',
    'vit-large-p16': 'class_stratified/mae_vit-large-p16_16xb60-amp-coslr-'
                     '800e_in1k-class-balanced-k960.py',
    'data2vec-beit-base-p16': 'data2vec/data2vec_beit-base-p16_16xb128-amp-'
                              'coslr-800e_in1k.py',
}
NAME = re.compile(r'^(?P<rep>[\w-]+?)_(?P<gpus>\d+)xb(?P<batch>\d+)-linear-'
                  r'(?P<sched>steplr|coslr)-(?P<epochs>\d+)e_(?P<data>[\w-]+)'
                  r'\.py$')


def _parts(path):
    match = NAME.match(osp.basename(path))
    assert match, osp.basename(path)
    return match.groupdict()


def _load_tool(*parts):
    spec = importlib.util.spec_from_file_location(
        parts[-1][:-3], osp.join(REPO, 'tools', *parts))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_dataset_has_every_representation():
    """The evaluation matrix: every encoder of the paper's tables x its two
    representations x every downstream dataset."""
    found = sorted((p['rep'], p['data']) for p in map(_parts, CONFIGS))
    assert found == sorted(
        (rep, data) for rep in REPRESENTATION_DIMS
        for data in DATASET_SETTINGS)


@pytest.mark.parametrize('path', CONFIGS, ids=osp.basename)
def test_config_follows_vissl_protocol(path):
    parts = _parts(path)
    classes, epochs, milestones, dataset_type = DATASET_SETTINGS[
        parts['data']]
    cfg = Config.fromfile(path)
    # two probes on the chosen representation, one run
    head = cfg.model.head
    assert head.type == 'MultiLinearProbeHead'
    assert tuple(head.probes) == ('linear', 'bn_linear')
    assert head.num_classes == classes
    assert head.in_channels == REPRESENTATION_DIMS[parts['rep']]
    assert cfg.val_evaluator.type == 'MultiHeadAccuracy'
    assert cfg.test_evaluator.type == 'MultiHeadAccuracy'
    # a frozen encoder loaded from a PMSN/MSN checkpoint
    backbone = cfg.model.backbone
    assert backbone.init_cfg == dict(
        type='Pretrained', checkpoint='', prefix='backbone.')
    if backbone.type == 'ResNet':
        assert backbone.frozen_stages == 4 and backbone.norm_eval is True
    else:
        depth = 24 if backbone.arch == 'large' else 12
        assert backbone.frozen_stages == depth
        assert backbone.drop_path_rate == 0
    # VISSL optimiser: lr 0.01 per 256 images, Nesterov, wd 5e-4
    total_batch = int(parts['gpus']) * int(parts['batch'])
    assert cfg.train_dataloader.batch_size == int(parts['batch'])
    opt = cfg.optim_wrapper.optimizer
    assert opt.type == 'SGD' and opt.nesterov is True
    assert opt.momentum == 0.9 and opt.weight_decay == 5e-4
    assert opt.lr == pytest.approx(0.01 * total_batch / 256)
    assert cfg.auto_scale_lr.base_batch_size == 256
    assert cfg.train_cfg.max_epochs == epochs == int(parts['epochs'])
    (sched, ) = cfg.param_scheduler
    assert sched.by_epoch is True
    if milestones == 'cos':
        assert parts['sched'] == 'coslr'
        assert sched.type == 'CosineAnnealingLR' and sched.T_max == epochs
        assert sched.eta_min_ratio == 0.01  # VISSL: 0.01 -> 0.0001
    else:
        assert parts['sched'] == 'steplr'
        assert sched.type == 'MultiStepLR' and sched.gamma == 0.1
        assert list(sched.milestones) == milestones
    # data: the downstream dataset, every transform builds
    train = cfg.train_dataloader.dataset
    if parts['data'] == 'in1k-1pct':  # the official SimCLR 1% list
        assert train.type == 'LowShotDataset'
        assert train.list_file.endswith('1percent.txt')
        train = train.dataset
    elif parts['data'].endswith('-1pct'):  # 1% of every class, seeded
        assert train.type == 'LowShotDataset' and train.fraction == 0.01
        train = train.dataset
    assert train.split == 'train'
    for dataset in (train, cfg.val_dataloader.dataset,
                    cfg.test_dataloader.dataset):
        assert dataset.type == dataset_type
        init_default_scope('mmpretrain')
        for t in dataset.pipeline:
            TRANSFORMS.build(t)
    assert cfg.val_dataloader.dataset.split != 'train'
    assert cfg.data_preprocessor.num_classes == classes


#: dataset of a probe config -> sample data format
SAMPLE_FORMAT = {'clevr-count': 'clevr', 'clevr-dist': 'clevr',
                 'kitti-dist': 'kitti', 'inat18': 'inat18',
                 'places205': 'places205', 'in1k': 'imagenet',
                 'cifar100': 'cifar100'}


@pytest.mark.parametrize('data', sorted(SAMPLE_FORMAT))
def test_downstream_datasets_read_their_real_layout(data, tmp_path):
    """The config's dataset arguments read the dataset's own files (the
    sample data of make_sample_data), with labels in the probe's range."""
    path = next(p for p in CONFIGS if _parts(p)['data'] == data)
    cfg = Config.fromfile(path)
    fmt = SAMPLE_FORMAT[data]
    root = make_sample_data(str(tmp_path), [fmt],
                            inat18_all_classes=False)[fmt]
    classes = DATASET_SETTINGS[data][0]
    init_default_scope('mmpretrain')
    for loader in (cfg.train_dataloader, cfg.val_dataloader):
        dataset = DATASETS.build(dict(loader.dataset, data_root=root))
        labels = [dataset.get_data_info(i)['gt_label']
                  for i in range(len(dataset))]
        assert labels and all(0 <= y < classes for y in labels)
        assert len(set(labels)) > 1


def _representative(rep):
    return next(p for p in CONFIGS if _parts(p)['rep'] == rep)


@pytest.mark.parametrize('rep', FULL_SIZE)
def test_full_size_model_builds_frozen_and_gives_both_probes(rep):
    cfg = Config.fromfile(_representative(rep))
    cfg.model.backbone.init_cfg = None
    if cfg.model.get('neck', {}).get('init_cfg'):
        cfg.model.neck.init_cfg = None
    init_default_scope('mmpretrain')
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.train()
    frozen = [model.backbone] + ([model.neck] if model.neck else [])
    for part in frozen:
        assert not any(p.requires_grad for p in part.parameters())
        # online training keeps BatchNorm statistics fixed (norm_eval)
        assert not any(m.training for m in part.modules()
                       if isinstance(m, _BatchNorm))
    assert all(p.requires_grad for p in model.head.parameters())
    with torch.no_grad():
        feats = model.extract_feat(torch.randn(2, 3, 224, 224))
        logits = model.head(feats)
    assert feats[-1].shape == (2, REPRESENTATION_DIMS[rep])
    assert set(logits) == {'linear', 'bn_linear'}
    assert all(v.shape == (2, cfg.model.head.num_classes)
               for v in logits.values())


def _state_shapes(module_cfg) -> dict:
    init_default_scope('mmpretrain')
    cfg = dict(module_cfg, init_cfg=None)
    cfg.pop('frozen_stages', None)
    return {k: tuple(v.shape)
            for k, v in MODELS.build(cfg).state_dict().items()}


@pytest.mark.parametrize('encoder', sorted(PRETRAINED_BY))
def test_probe_encoder_loads_every_weight_of_its_pretraining(encoder):
    """Each probe's frozen encoder (and the final norm its concat-4 neck
    loads from 'backbone.ln1.') finds every weight, with its shape, in the
    'backbone.' weights of the pretraining model (both narrowed alike)."""
    pretrain = Config.fromfile(osp.join(REPO, 'configs',
                                        PRETRAINED_BY[encoder]))
    shrink_backbone(pretrain.model.backbone)
    saved = {f'backbone.{k}': v
             for k, v in _state_shapes(pretrain.model.backbone).items()}
    for rep in (r for r in REPRESENTATION_DIMS
                if r.rsplit('-', 1)[0] == encoder):
        cfg = Config.fromfile(_representative(rep))
        shrink_backbone(cfg.model.backbone)
        needed = {f'backbone.{k}': v
                  for k, v in _state_shapes(cfg.model.backbone).items()}
        if cfg.model.get('neck', {}).get('type') == 'ConcatCLSNeck':
            width = needed['backbone.cls_token'][-1]
            needed.update({'backbone.ln1.weight': (width, ),
                           'backbone.ln1.bias': (width, )})
        assert {k: saved.get(k) for k in needed} == needed, rep
    if encoder == 'data2vec-beit-base-p16':  # why it has its own encoder
        plain = Config.fromfile(_representative('vit-base-p16-lastcls'))
        shrink_backbone(plain.model.backbone)
        plain = {f'backbone.{k}' for k in _state_shapes(
            plain.model.backbone)}
        assert 'backbone.pos_embed' in plain - set(saved)


@pytest.fixture(scope='module')
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp('ckpt')
    vit, resnet = str(root / 'pmsn_vit.pth'), str(root / 'resnet.pth')
    return {'vit': (vit, save_pmsn_vit_checkpoint(vit)),
            'resnet': (resnet, save_resnet_checkpoint(resnet))}


@pytest.mark.parametrize('rep', sorted(REPRESENTATIONS))
def test_toy_probe_trains_with_frozen_encoder(rep, checkpoints, tmp_path):
    """tools/train.py on a real config (tiny encoder, toy data, 2 iters)."""
    ckpt, source = checkpoints['vit' if rep.startswith('vit') else 'resnet']
    zero = dict(type='Constant', layer='Linear', val=0.0, bias=0.0)
    config = write_toy_probe_config(tmp_path, rep, ckpt, num_train=32,
                                    batch_size=16, head_init=zero)
    work_dir = str(tmp_path / 'work')
    _load_tool('train.py').main([config, '--work-dir', work_dir])
    trained = torch.load(osp.join(work_dir, 'epoch_1.pth'),
                         weights_only=True)
    assert trained['meta']['iter'] == 2  # 32 images, batch 16, 1 epoch
    state = trained['state_dict']
    # the frozen backbone is the checkpoint's, weights and BN statistics
    backbone = {k: v for k, v in state.items() if k.startswith('backbone.')}
    assert backbone
    for key, value in backbone.items():
        torch.testing.assert_close(value, source[key], rtol=0, atol=0)
    if rep == 'vit-concat4cls':  # the neck holds the encoder's final norm
        torch.testing.assert_close(state['neck.weight'],
                                   source['backbone.ln1.weight'])
        torch.testing.assert_close(state['neck.bias'],
                                   source['backbone.ln1.bias'])
    # both probes moved away from their zero init
    for probe in ('head.probes.linear.weight',
                  'head.probes.bn_linear.fc.weight',
                  'head.probes.bn_linear.bn.running_mean'):
        assert state[probe].abs().sum() > 0, probe
    if rep == 'vit-lastcls':  # tools/test.py evaluates the trained probe
        metrics = _load_tool('test.py').main([
            config, osp.join(work_dir, 'epoch_1.pth'), '--work-dir',
            str(tmp_path / 'test')
        ])
        assert {'linear/top1', 'linear/top5', 'bn_linear/top1',
                'bn_linear/top5', 'best/top1'} <= set(metrics)


def test_in1k_1pct_reads_the_official_list(tmp_path):
    """The 1% configs keep exactly the images named in 1percent.txt."""
    root = make_sample_data(str(tmp_path), ['imagenet'])['imagenet']
    with open(osp.join(root, '1percent.txt')) as f:
        listed = sorted(line.strip() for line in f if line.strip())
    path = next(p for p in CONFIGS if _parts(p)['data'] == 'in1k-1pct')
    cfg = Config.fromfile(path)
    train = cfg.train_dataloader.dataset
    train.list_file = osp.join(root, '1percent.txt')
    train.dataset.data_root = root
    init_default_scope('mmpretrain')
    dataset = DATASETS.build(train)
    names = sorted(osp.basename(dataset.get_data_info(i)['img_path'])
                   for i in range(len(dataset)))
    assert names == listed and len(names) == 30
    # 3 images of each class, each with its folder's label
    for i in range(30):
        info = dataset.get_data_info(i)
        wnid = osp.basename(osp.dirname(info['img_path']))
        assert osp.basename(info['img_path']).startswith(wnid)
        assert info['gt_label'] == IMAGENET_WNIDS.index(wnid)
    assert sorted(dataset.get_data_info(i)['gt_label']
                  for i in range(30)) == sorted(list(range(10)) * 3)
