"""Class-stratified configs (paper §4): ImageNet builds and CPU study runs."""
import glob
import math
import os.path as osp
import re

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from mmpretrain.registry import MODELS, TRANSFORMS

from tests._configs import CONFIGS, small_knn_eval

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

STRATIFIED = osp.join(CONFIGS, 'class_stratified')
IMAGENET = sorted(glob.glob(osp.join(STRATIFIED, '*_in1k-*.py')))
METHOD_BASES = [
    osp.join(CONFIGS, 'vicreg',
             'vicreg_resnet50_8xb128-amp-coslr-300e_in1k.py'),
    osp.join(CONFIGS, 'data2vec',
             'data2vec_beit-base-p16_16xb128-amp-coslr-800e_in1k.py'),
]
# the five methods of Table 1 (the PMSN toy pair there is a sampler config,
# tests/test_configs/test_sampler_configs.py)
CPU_STUDY = sorted(p for p in glob.glob(
    osp.join(STRATIFIED, 'cpu_study', '*.py'))
                   if not osp.basename(p).startswith('pmsn_'))
# paper §4: K for the class-imbalanced runs
IMBALANCED_K = dict(simclr=8, vicreg=2, pmsn=2, mae=2, data2vec=2)


def _name(path):
    return osp.basename(path)


def _k_from_name(path):
    return int(re.search(r'class-(?:im)?balanced-k(\d+)', path).group(1))


def _build_model(cfg):
    # The meta device skips allocating ViT-B/L weights; mmpretrain's ResNet
    # calls Tensor.item() in its constructor, which meta tensors refuse.
    device = 'cpu' if 'resnet' in cfg.model.backbone.type.lower() else 'meta'
    with torch.device(device):
        return MODELS.build(cfg.model)


def _build_transforms(pipeline):
    return [TRANSFORMS.build(t) for t in pipeline]


def test_every_method_has_both_variants():
    assert len(IMAGENET) == 10 and len(CPU_STUDY) == 10
    for paths in (IMAGENET, CPU_STUDY):
        methods = {_name(p).split('_')[0] for p in paths}
        assert methods in ({'simclr', 'vicreg', 'pmsn', 'mae', 'data2vec'},
                           {'simclr', 'vicreg', 'msn', 'mae', 'data2vec'})
        assert sum('class-balanced' in p for p in paths) == 5


@pytest.mark.parametrize('path', IMAGENET + METHOD_BASES, ids=_name)
def test_imagenet_config_builds_model_and_pipeline(path):
    cfg = Config.fromfile(path)
    assert cfg.default_scope == 'mmpretrain'
    assert 'pmsn_mm' in cfg.custom_imports['imports']
    init_default_scope(cfg.default_scope)
    model = _build_model(cfg)
    expected_type = {
        'simclr': 'SyncFreeSimCLR', 'vicreg': 'VICReg', 'pmsn': 'PMSN',
        'mae': 'MAE',
        'data2vec': 'Data2VecVision'
    }[_name(path).split('_')[0]]
    assert type(model).__name__ == expected_type
    transforms = _build_transforms(cfg.train_dataloader.dataset.pipeline)
    loader = type(transforms[0]).__name__
    assert loader in ('CheckedLoadImageFromFile', 'LoadImageForViews')
    if loader == 'LoadImageForViews':  # views drawn batched on the device
        pre = cfg.model.get('data_preprocessor') or cfg.data_preprocessor
        assert pre.type == 'BatchAugmentPreprocessor'
    assert type(transforms[-1]).__name__ == 'PackInputs'
    if expected_type == 'Data2VecVision':
        # the mask lives on the patch grid of the backbone
        gen = [t for t in transforms
               if type(t).__name__ == 'BEiTMaskGenerator'][0]
        assert (gen.height, gen.width) == model.backbone.patch_resolution
        assert list(model.target_layers) == [6, 7, 8, 9, 10, 11]
        assert cfg.model.backbone.drop_path_rate == 0.25
        assert cfg.optim_wrapper.clip_grad.max_norm == 3.0
        assert cfg.optim_wrapper.optimizer.weight_decay == 0.05
    if expected_type == 'VICReg':
        assert model.neck.fc2.out_features == 8192
        assert cfg.optim_wrapper.optimizer.type == 'SyncFreeLARS'
        assert cfg.optim_wrapper.optimizer.weight_decay == 1e-6


@pytest.mark.parametrize('path', IMAGENET, ids=_name)
def test_imagenet_sampler_matches_name_and_batch(path):
    cfg = Config.fromfile(path)
    batch_sampler = cfg.train_dataloader.batch_sampler
    k = _k_from_name(path)
    assert batch_sampler.type == 'ClassStratifiedBatchSampler'
    assert batch_sampler.classes_per_batch == k
    # the batch size is the dataloader's alone (mmengine passes it on)
    assert 'batch_size' not in batch_sampler
    assert cfg.train_dataloader.drop_last is False
    gpus, per_gpu = map(int, re.search(r'_(\d+)xb(\d+)-', path).groups())
    assert per_gpu == cfg.train_dataloader.batch_size
    global_batch = gpus * per_gpu
    # K = 960 needs a global batch divisible by 960 (paper footnote)
    assert global_batch % 960 == 0 and global_batch % k == 0
    method = _name(path).split('_')[0]
    if 'class-imbalanced' in path:
        assert k == IMBALANCED_K[method]
    else:
        assert k == 960
    # ImageNet-1K's smallest class has 732 images
    assert batch_sampler.get('replacement', False) == (
        global_batch // k > 732)


@pytest.mark.parametrize('balanced', [p for p in IMAGENET + CPU_STUDY
                                      if 'class-balanced' in p], ids=_name)
def test_variants_differ_only_in_classes_per_batch(balanced):
    imbalanced = glob.glob(
        re.sub(r'class-balanced-k\d+', 'class-imbalanced-k*', balanced))
    assert len(imbalanced) == 1
    a = Config.fromfile(balanced).to_dict()
    b = Config.fromfile(imbalanced[0]).to_dict()
    sa = a['train_dataloader'].pop('batch_sampler')
    sb = b['train_dataloader'].pop('batch_sampler')
    assert a == b
    assert sa.pop('classes_per_batch') > sb.pop('classes_per_batch')
    sb.pop('replacement', None)
    assert sa == sb


class _RecordLabels(Hook):
    """Records the gt labels of every training batch."""

    def __init__(self):
        self.batches = []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.batches.append(
            [int(s.gt_label.item()) for s in data_batch['data_samples']])


@pytest.mark.parametrize('path', CPU_STUDY, ids=_name)
def test_cpu_study_config_trains_two_iterations(path, tmp_path):
    cfg = Config.fromfile(path)
    k = _k_from_name(path)
    assert cfg.train_cfg.max_iters <= 300
    assert cfg.train_dataloader.dataset.label == 'background'
    assert cfg.train_dataloader.batch_sampler.classes_per_batch == k
    # tiny run: 200 images, batches of 10, 2 iterations, tiny kNN sets
    cfg.work_dir = str(tmp_path)
    cfg.train_cfg.max_iters = 2
    cfg.train_dataloader.batch_size = 10  # reaches the batch sampler
    cfg.train_dataloader.dataset.num_samples = 200
    small_knn_eval(cfg, memory=40, query=20, k=5)
    cfg.default_hooks.logger.interval = 1
    runner = Runner.from_cfg(cfg)
    labels = _RecordLabels()
    runner.register_hook(labels)
    runner.train()

    assert runner.iter == 2
    assert len(labels.batches) == 2
    for batch in labels.batches:
        assert len(batch) == 10
        assert len(set(batch)) == k  # K classes, 10 / K images each
    loss = runner.message_hub.get_scalar('train/loss').current()
    assert math.isfinite(loss)
    # the kNN val loop ran at the last iteration, on both labels
    for key in ('knn_digit/top1', 'knn_background/top1'):
        assert 0 <= runner.message_hub.get_scalar(
            f'val/{key}').current() <= 100
