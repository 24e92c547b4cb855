"""tools/analysis_tools/prior_study.py: the config of one run of the toy
prior study (prior, KL direction, schedule length, dataset options), the
summary table and the time estimate, against values worked out by hand."""
import os.path as osp

import pytest
from mmengine.config import Config

from tests._configs import CONFIGS
from tests._tools import import_beside_tools

study = import_beside_tools('tools/analysis_tools/prior_study.py')
estimate_seconds, mean_std, run_dir = (study.estimate_seconds,
                                       study.mean_std, study.run_dir)
scale_schedule, study_config, summarise = (study.scale_schedule,
                                           study.study_config,
                                           study.summarise)

CONFIG = osp.join(CONFIGS, 'pmsn',
                  'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
PSWAV = osp.join(CONFIGS, 'pswav',
                 'pswav_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
ADAPTIVE = osp.join(
    CONFIGS, 'pmsn',
    'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-adaptive-power-law.py')


def test_mean_std_and_schedule_scaling():
    assert mean_std([1.0, 3.0]) == '2 ± 1.4'  # sample std sqrt(2)
    assert mean_std([5.0]) == '5 ± 0'
    cfg = Config.fromfile(CONFIG)
    old = cfg.train_cfg.max_iters
    scale_schedule(cfg, old // 2)
    assert cfg.train_cfg.max_iters == old // 2
    cos = [s for s in cfg.param_scheduler if s.type == 'CosineAnnealingLR'][0]
    assert cos.end == old // 2


def test_schedule_scaling_of_prior_warmup_and_prototype_freezing():
    adaptive = Config.fromfile(ADAPTIVE)
    warmup = adaptive.model.head.prior.warmup_updates
    assert warmup == adaptive.warmup_iters > 0
    scale_schedule(adaptive, adaptive.train_cfg.max_iters // 3)
    assert adaptive.model.head.prior.warmup_updates == round(warmup / 3)
    pswav = Config.fromfile(PSWAV)
    hook = [h for h in pswav.custom_hooks if h.type == 'SwAVHook'][0]
    frozen = hook.frozen_layers_cfg.prototypes
    scale_schedule(pswav, pswav.train_cfg.max_iters // 3)
    hook = [h for h in pswav.custom_hooks if h.type == 'SwAVHook'][0]
    assert hook.frozen_layers_cfg.prototypes == round(frozen / 3)


def test_data_options_reach_every_toy_dataset():
    """Dataset options change the training set, the kNN memory and queries
    and the val loop's copies alike, and nothing else."""
    plain = study_config(CONFIG, 'power-law', 'forward', 0, 'w')
    cfg = study_config(CONFIG, 'power-law', 'forward', 0, 'w',
                       data_options={'digit_size': 12,
                                     'shape_options.max_angle': 0.0,
                                     'background_source': 'noise'})
    sets = [cfg.train_dataloader.dataset, cfg.knn_train_dataset,
            cfg.knn_test_dataset, cfg.val_dataloader.dataset.memory,
            cfg.val_dataloader.dataset.query]
    for ds in sets:
        assert ds.digit_size == 12
        assert ds.shape_options == dict(max_angle=0.0)
        assert ds.background_source == 'noise'
    assert plain.train_dataloader.dataset.digit_size == 10
    assert 'shape_options' not in plain.train_dataloader.dataset
    # splits and sizes are untouched
    assert cfg.knn_test_dataset.split == 'test'
    assert cfg.knn_train_dataset.num_samples == \
        plain.knn_train_dataset.num_samples
    assert cfg.model == plain.model


def test_run_settings():
    """Seed, folder, run name, batch cap, schedule length and amp reach the
    config; the config given is not changed."""
    base = Config.fromfile(CONFIG)
    cfg = study_config(base, 'uniform', 'reverse', 3, 'study',
                       cfg_options={'train_dataloader.batch_size': 64},
                       max_iters=7, max_batch_size=16, amp=True)
    assert cfg.randomness == dict(seed=3, deterministic=False)
    assert cfg.work_dir == run_dir('study', 'uniform', 'reverse', 3) == \
        osp.join('study', 'uniform-reverse-kl', 'seed3')
    stem = osp.splitext(osp.basename(CONFIG))[0]
    assert cfg.experiment_name == f'{stem}_uniform-reverse-kl_seed3'
    assert cfg.train_dataloader.batch_size == 16
    assert cfg.train_cfg.max_iters == 7
    assert cfg.optim_wrapper.type == 'DeviceAwareAmpOptimWrapper'
    assert cfg.optim_wrapper.dtype == 'bfloat16'
    assert cfg.model.head.prior == dict(type='UniformPrior')
    assert cfg.model.head.loss.kl_direction == 'reverse'
    assert base.train_dataloader.batch_size == 128
    assert base.model.head.prior.type == 'PowerLawPrior'


def test_adaptive_prior_choice_keeps_or_builds_the_prior():
    built = study_config(CONFIG, 'adaptive', 'forward', 0, 'w')
    assert built.model.head.prior == dict(type='AdaptivePowerLawPrior')
    own = study_config(ADAPTIVE, 'adaptive', 'forward', 0, 'w')
    assert own.model.head.prior.momentum == 0.99  # the config's
    with pytest.raises(ValueError, match="prior 'power-law' uses the "
                       "config's prior"):
        study_config(ADAPTIVE, 'power-law', 'forward', 0, 'w')
    pswav = study_config(PSWAV, 'adaptive', 'forward', 0, 'w')
    assert pswav.model.head.prior == dict(type='AdaptivePowerLawPrior')
    assert 'kl_direction' not in pswav.model.head.loss
    with pytest.raises(ValueError, match="kl_direction 'reverse' needs a "
                       'PMSN config, but the loss is PSwAVLoss'):
        study_config(PSWAV, 'adaptive', 'reverse', 0, 'w')


def test_bad_settings_name_the_allowed_values():
    with pytest.raises(ValueError, match=r"prior must be one of \['adaptive'"
                       r", 'power-law', 'uniform'\], got 'zipf'"):
        study_config(CONFIG, 'zipf', 'forward', 0, 'w')
    with pytest.raises(ValueError, match="kl_direction must be one of"):
        study_config(CONFIG, 'uniform', 'both', 0, 'w')
    with pytest.raises(ValueError, match='dataset options need a config '
                       'with train_dataloader.dataset'):
        cfg = Config.fromfile(CONFIG)
        cfg.train_dataloader = dict(batch_size=1)
        study_config(cfg, 'uniform', 'forward', 0, 'w',
                     data_options={'digit_size': 12})


def test_summary_table():
    results = {'uniform': [dict(knn_digit_backbone=40.0, nmi_digit=0.1),
                           dict(knn_digit_backbone=50.0, nmi_digit=0.3)]}
    table = summarise(results).splitlines()
    assert table[0].startswith('| run | seeds | digit kNN (CLS) |')
    cells = table[2].split(' | ')
    assert cells[:3] == ['| uniform', '2', '45 ± 7.1']  # std 10/sqrt(2)
    assert cells[6] == '0.2 ± 0.14'  # NMI digit
    assert cells[3] == '–'  # no background kNN in these runs


def test_estimate_arithmetic():
    """step x iterations x runs / runs-per-device, rounded up to whole
    waves: the paper config has 300 epochs x (50,000 // 1,024 = 48)
    iterations; 2 priors x 3 seeds in waves of 3 (then of 4)."""
    assert estimate_seconds(0.02, 14400, 6, 3) == pytest.approx(576)
    assert estimate_seconds(0.02, 14400, 6, 4) == pytest.approx(576)
    assert estimate_seconds(0.02, 14400, 6, 6) == pytest.approx(288)
    assert estimate_seconds(0.02, 100, 1, 3) == pytest.approx(2)
