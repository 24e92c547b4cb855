"""PMSN configs keep the paper's settings; the CPU toy job runs (every config
trains on real files in test_every_config_runs.py)."""
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

from pmsn_mm.evaluation import extract_features, knn_top1
from tests._configs import CONFIGS, small_knn_eval

PMSN_CONFIGS = sorted(glob.glob(osp.join(CONFIGS, 'pmsn', '*.py')))
CPU_TOY = osp.join(CONFIGS, 'pmsn',
                   'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py')


def test_there_are_paper_configs():
    names = {osp.basename(p) for p in PMSN_CONFIGS}
    for part in ('inat18-uniform', 'inat18-power-law', 'inat18-class-prior',
                 'in1k-uniform', 'in1k-power-law',
                 'cifar10-mnist-overlay-power-law', 'cpu-toy_power-law',
                 'cpu-toy_uniform-prior'):
        assert any(part in n for n in names), part


def test_paper_settings():
    inat = Config.fromfile(
        osp.join(CONFIGS, 'pmsn',
                 'pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py'))
    assert inat.model.head.num_prototypes == 8142
    assert inat.model.head.loss.prior_weight == 5.0
    assert inat.model.head.prior == dict(type='PowerLawPrior', tau=0.25)
    assert inat.model.mask_ratio == 0.15
    # target + 1 random view at 224 px, 10 focal views at 96 px, on device
    views = inat.data_preprocessor.views
    assert inat.data_preprocessor.type == 'BatchAugmentPreprocessor'
    assert [(v.num_views, v.size, tuple(v.scale)) for v in views] == [
        (2, 224, (0.3, 1.0)), (10, 96, (0.05, 0.3))]
    assert inat.model.num_random_views == 1
    assert [t.type for t in inat.train_dataloader.dataset.pipeline] == [
        'LoadImageForViews', 'PackInputs']
    assert inat.optim_wrapper.clip_grad.max_norm == 3.0
    wd = [s for s in inat.param_scheduler
          if s.type == 'CosineAnnealingWeightDecay'][0]
    assert inat.optim_wrapper.optimizer.weight_decay == 0.04
    assert wd.eta_min == 0.4
    toy = Config.fromfile(
        osp.join(CONFIGS, 'pmsn', 'pmsn_vit-tiny-p4_8xb128-300e_'
                 'cifar10-mnist-overlay-power-law.py'))
    assert toy.model.head.num_prototypes == 10
    assert toy.model.head.loss.prior_weight == 100.0
    assert toy.model.mask_ratio == 0.05
    assert toy.train_dataloader.dataset.pipeline[0].num_views == [1, 1]
    assert toy.optim_wrapper.clip_grad is None


def test_cpu_toy_config_runs_two_iterations(tmp_path):
    cfg = Config.fromfile(CPU_TOY)
    cfg.work_dir = str(tmp_path)
    cfg.train_cfg.max_iters = 2
    cfg.train_dataloader.batch_size = 16
    cfg.train_dataloader.dataset.num_samples = 64
    small_knn_eval(cfg)
    runner = Runner.from_cfg(cfg)
    runner.train()
    assert runner.iter == 2
    hub = runner.message_hub
    # the schedule hooks ran (value before the last iteration, iter 1 of 2)
    assert hub.get_scalar('train/target_momentum').current() == \
        pytest.approx(0.996 + 0.004 * 1 / (1.25 * 2))
    for key in ('loss_ce', 'loss_prior', 'prior_kl', 'num_prototypes_used'):
        assert torch.isfinite(torch.tensor(
            hub.get_scalar(f'train/{key}').current()))
    # the kNN val loop ran at the last iteration, on both labels
    for key in ('knn_digit/top1', 'knn_background/top1'):
        assert 0 <= hub.get_scalar(f'val/{key}').current() <= 100


def test_knn_val_loop_equals_knn_on_extracted_features(tmp_path):
    """The config's kNN evaluation (FeatureValLoop + KNNEvalDataset +
    KNNAccuracy) gives the weighted kNN of the frozen backbone features."""
    cfg = Config.fromfile(CPU_TOY)
    cfg.work_dir = str(tmp_path)
    cfg.train_cfg.max_iters = 2
    cfg.train_dataloader.batch_size = 8
    cfg.train_dataloader.dataset.num_samples = 32
    small_knn_eval(cfg, memory=60, query=20, k=5)
    cfg.val_dataloader.batch_size = 16  # batches straddle memory and query
    runner = Runner.from_cfg(cfg)
    runner.train()
    metrics = runner.val_loop.run()
    assert set(metrics) == {'knn_digit/top1', 'knn_background/top1'}
    model = runner.model.eval()
    dataset = runner.val_loop.dataloader.dataset
    feats, labels = extract_features(
        model, dataset, label_keys=('digit_label', 'background_label'))
    mem, qry = slice(0, 60), slice(60, 80)
    for key in ('digit', 'background'):
        y = labels[f'{key}_label']
        expected = knn_top1(feats[mem], y[mem], feats[qry], y[qry], k=5,
                            temperature=0.07)
        assert metrics[f'knn_{key}/top1'] == pytest.approx(expected)
