"""tools/analysis_tools/prior_toy_study.py runs end to end on a tiny setting:
one run after another in this process, and several runs sharing the device
as processes of their own (the paper-scale command, shrunk)."""
import json
import os.path as osp

import matplotlib.image
import numpy as np
import pytest

from tests._configs import CONFIGS
from tests._tools import load_tool

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

CONFIG = osp.join(CONFIGS, 'pmsn',
                  'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
PAPER = osp.join(CONFIGS, 'pmsn',
                 'pmsn_vit-tiny-p4_1xb1024-300e_shapes-digits-power-law.py')
PNG_HEADER = b'\x89PNG\r\n\x1a\n'

study = load_tool('tools/analysis_tools/prior_toy_study.py')
TINY = [
    'train_dataloader.batch_size=16',
    'train_dataloader.dataset.num_samples=64',
    'knn_train_dataset.num_samples=120',
    'knn_test_dataset.num_samples=40',
    # the val loop's final kNN (the study computes its own)
    'val_dataloader.dataset.memory.num_samples=120',
    'val_dataloader.dataset.query.num_samples=40',
    'custom_hooks=[]',
]


def test_study_end_to_end(tmp_path, capsys):
    out = study.main([
        CONFIG, '--seeds', '0', '1', '--max-iters', '3', '--eval-interval',
        '2', '--curve-samples', '50', '--k', '5', '--num-refs', '3',
        '--num-neighbors', '4', '--work-dir',
        str(tmp_path), '--kl-directions', 'forward', 'reverse',
        '--estimate-iters', '1', '--cfg-options', *TINY
    ])
    # one progress bar over the 2 priors x 2 directions x 2 seeds runs
    err = capsys.readouterr().err
    assert 'toy study' in err and '8/8' in err
    runs = out['runs']
    assert set(runs) == {
        'untrained encoder', 'power-law', 'uniform', 'power-law-reverse-kl',
        'uniform-reverse-kl'
    }
    for name, seeds in runs.items():
        assert len(seeds) == 2, name
        for r in seeds:
            for key in ('knn_digit_backbone', 'knn_background_neck'):
                assert 0 <= r[key] <= 100
            assert 0 <= r['nmi_digit'] <= 1
            assert sum(r['usage_sorted']) == pytest.approx(1.0)
            assert r['usage_sorted'] == sorted(r['usage_sorted'],
                                               reverse=True)
    # the prior that was trained with is the one reported
    pl = np.asarray(runs['power-law'][0]['prior_sorted'])
    ranks = np.arange(1, 11.0)
    np.testing.assert_allclose(pl, ranks**-0.5 / np.sum(ranks**-0.5))
    np.testing.assert_allclose(runs['uniform'][0]['prior_sorted'],
                               np.full(10, 0.1))
    assert runs['power-law'][0]['kl_direction'] == 'forward'
    assert runs['uniform-reverse-kl'][1]['kl_direction'] == 'reverse'
    # curves: iteration 0, 2 (interval) and the last is not a multiple
    assert [p['iter'] for p in runs['power-law'][0]['curve']] == [0, 2]
    saved = json.load(open(tmp_path / 'results.json'))
    assert saved['table'] == (tmp_path / 'table.md').read_text().strip()
    assert '| power-law | 2 |' in saved['table']
    for name in ('fig3_power-law', 'fig3_uniform', 'curves_power-law',
                 'curves_uniform-reverse-kl'):
        assert (tmp_path / f'{name}.png').read_bytes()[:8] == PNG_HEADER
    assert osp.isfile(tmp_path / 'power-law' / 'seed1' / 'metrics.json')


def test_unknown_prior_is_refused():
    with pytest.raises(SystemExit):
        study.parse_args([CONFIG, '--priors', 'zipf'])


def test_data_options_and_overrides_reach_the_run_config():
    """The tool's KEY=VALUE options become the package's dicts."""
    args = study.parse_args([
        CONFIG, '--data-options', 'digit_size=12',
        'shape_options.max_angle=0.0', '--cfg-options',
        'train_dataloader.batch_size=8', '--max-iters', '4'])
    cfg = study.make_config(args, 'power-law', 'forward', 0)
    assert cfg.knn_test_dataset.digit_size == 12
    assert cfg.val_dataloader.dataset.query.shape_options == dict(
        max_angle=0.0)
    assert cfg.train_dataloader.batch_size == 8
    assert cfg.train_cfg.max_iters == 4


PSWAV = osp.join(CONFIGS, 'pswav',
                 'pswav_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')


def test_study_runs_pswav_with_fixed_and_adaptive_priors(tmp_path):
    out = study.main([
        PSWAV, '--seeds', '0', '--priors', 'power-law', 'adaptive',
        '--max-iters', '3', '--eval-interval', '2', '--curve-samples', '50',
        '--k', '5', '--num-refs', '2', '--num-neighbors', '3',
        '--work-dir', str(tmp_path), '--cfg-options', *TINY
    ])
    runs = out['runs']
    assert set(runs) == {'untrained encoder', 'power-law', 'adaptive'}
    fixed, adaptive = runs['power-law'][0], runs['adaptive'][0]
    assert fixed['prior_tau'] == 0.5
    assert 0.0 <= adaptive['prior_tau'] <= 2.0
    # the reported prior is the learned one
    ranks = np.arange(1, 11.0)
    weights = ranks**-adaptive['prior_tau']
    np.testing.assert_allclose(adaptive['prior_sorted'],
                               weights / weights.sum())
    assert [p['iter'] for p in adaptive['curve']] == [0, 2]
    assert adaptive['curve'][0]['prior_tau'] == 0.0  # tau_init, untrained
    for r in (fixed, adaptive):
        assert 0 <= r['knn_digit_backbone'] <= 100
        assert sum(r['usage_sorted']) == pytest.approx(1.0)
    assert '| adaptive | 1 |' in out['table']
    assert 'prior tau' in out['table']
    assert (tmp_path / 'fig3_adaptive.png').read_bytes()[:8] == PNG_HEADER


def test_quick_check_settings():
    """--quick: the first seed, 2 iterations, 128 images per toy set, small
    figures; explicit --max-iters and num_samples win; each run's logger
    and visualizer have their own name."""
    args = study.parse_args([CONFIG, '--seeds', '0', '1', '2', '--quick'])
    assert args.seeds == [0]
    assert args.max_iters == study.QUICK_ITERS == 2
    assert args.data_options == ['num_samples=128']
    assert (args.num_refs, args.num_neighbors) == (2, 3)
    cfg = study.make_config(args, 'uniform', 'forward', 0)
    assert cfg.train_cfg.max_iters == 2
    assert cfg.val_dataloader.dataset.query.num_samples == 128
    stem = osp.splitext(osp.basename(CONFIG))[0]
    assert cfg.experiment_name == f'{stem}_uniform_seed0'
    args = study.parse_args([CONFIG, '--quick', '--max-iters', '5',
                             '--data-options', 'num_samples=64',
                             'digit_size=12'])
    assert args.max_iters == 5
    assert args.data_options == ['num_samples=64', 'digit_size=12']
    plain = study.parse_args([CONFIG])
    assert plain.seeds == [0, 1, 2] and plain.max_iters is None


def test_runs_sharing_the_device_end_to_end(tmp_path, capsys):
    """The paper-scale command, shrunk: both priors as 2 processes sharing
    the CPU, the estimate printed before any run starts, the figures and
    the table."""
    out = study.main([
        PAPER, '--runs-per-device', '2', '--device', 'cpu', '--seeds', '0',
        '--max-iters', '3', '--estimate-iters', '2', '--curve-samples', '50',
        '--k', '5', '--num-refs', '2', '--num-neighbors', '3',
        '--work-dir', str(tmp_path), '--cfg-options', *TINY
    ])
    printed = capsys.readouterr().out
    estimate = printed.index('[toy study] estimate on cpu')
    starts = [printed.index(f'[toy study] started {p} seed 0')
              for p in ('power-law', 'uniform')]
    assert estimate < min(starts)
    # measured step x 3 iterations x 1 wave (2 runs, 2 at a time)
    est = out['estimate']
    assert (est['iters'], est['runs'], est['runs_per_device']) == (3, 2, 2)
    assert est['step_seconds'] > 0
    assert est['seconds'] == pytest.approx(est['step_seconds'] * 3)
    assert f'{est["step_seconds"] * 1e3:.1f} ms per step x 3 iterations ' \
        'x 1 waves (2 runs, 2 at a time)' in printed[estimate:]
    # each run trained in its own process, with its own log
    for prior in ('power-law', 'uniform'):
        log = (tmp_path / prior / 'seed0' / 'study.log').read_text()
        assert 'Saving checkpoint at 3 iterations' in log
        run = out['runs'][prior][0]
        assert run['prior'] == prior
        assert [p['iter'] for p in run['curve']] == [0, 1, 2, 3]
        assert 0 <= run['knn_digit_backbone'] <= 100
    for name in ('fig3_power-law', 'fig3_uniform', 'curves_power-law',
                 'curves_uniform'):
        image = matplotlib.image.imread(str(tmp_path / f'{name}.png'))
        assert image.ndim == 3 and image.std() > 0
    table = (tmp_path / 'table.md').read_text()
    rows = [line.split(' | ')[0] for line in table.splitlines()[2:]]
    assert rows == ['| untrained encoder', '| power-law', '| uniform']
    np.testing.assert_allclose(out['runs']['uniform'][0]['prior_sorted'],
                               np.full(10, 0.1))


def test_estimate_arithmetic_with_a_fake_step(tmp_path, capsys,
                                              monkeypatch):
    """The printed estimate with a fake step time: the paper config has 300
    epochs x (50,000 // 1,024 = 48) iterations; 2 priors x 3 seeds in
    waves of 3."""
    monkeypatch.setattr(study, 'measure_step_seconds', lambda args: 0.25)
    out = study.main([PAPER, '--runs-per-device', '3', '--device', 'cpu',
                      '--estimate-only', '--work-dir', str(tmp_path)])
    assert out['estimate']['seconds'] == 0.25 * 14400 * 2 == 7200
    printed = capsys.readouterr().out
    assert '250.0 ms per step x 14400 iterations x 2 waves (6 runs, 3 at a ' \
        'time) = 7200.0 s = 120.0 min' in printed
    assert '(one at a time: 360.0 min)' in printed
    # nothing trained
    assert not osp.exists(tmp_path / 'power-law')
    assert not osp.exists(tmp_path / 'results.json')


def test_device_and_runs_per_device_are_checked(tmp_path):
    with pytest.raises(SystemExit, match="--device must be 'cpu', 'cuda'"):
        study.main([CONFIG, '--device', 'tpu', '--estimate-only',
                    '--work-dir', str(tmp_path)])
    with pytest.raises(SystemExit):
        study.parse_args([CONFIG, '--runs-per-device', '0'])
    assert study.parse_args([CONFIG]).device == 'auto'
    assert study.parse_args([CONFIG, '--quick']).estimate_iters == 1
    # --amp: bfloat16 autocast through the project's wrapper; --quick: a
    # small batch for the paper config
    cfg = study.make_config(study.parse_args([PAPER, '--amp', '--quick']),
                            'uniform', 'forward', 0)
    assert cfg.optim_wrapper.type == 'DeviceAwareAmpOptimWrapper'
    assert cfg.optim_wrapper.dtype == 'bfloat16'
    assert cfg.train_dataloader.batch_size == 32
    assert cfg.work_dir == osp.join('work_dirs', 'prior_toy_study',
                                    'uniform', 'seed0')
