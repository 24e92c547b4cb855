"""The CPU class-stratified study tool: configs, summary table, reuse."""
import importlib.util
import json
import os.path as osp

import pytest

from tests._configs import REPO

TOOL = osp.join(REPO, 'tools', 'analysis_tools',
                'class_stratified_cpu_study.py')


def _log_knn(run, digit, background, timestamp='20260101_000000'):
    """What the val loop logs: a scalars.json line with both metrics."""
    vis = run / timestamp / 'vis_data'
    vis.mkdir(parents=True)
    lines = [dict(loss=1.0, step=299),
             {'knn_digit/top1': digit, 'knn_background/top1': background,
              'step': 300}]
    (vis / 'scalars.json').write_text(
        ''.join(json.dumps(line) + '\n' for line in lines))


def _tool():
    spec = importlib.util.spec_from_file_location('cs_study', TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_finds_both_variants_of_the_five_methods():
    configs = _tool().study_configs()
    assert set(configs) == {'simclr', 'vicreg', 'msn', 'mae', 'data2vec'}
    for variants in configs.values():
        assert 'class-balanced-k10' in variants['balanced']
        assert 'class-imbalanced-k2' in variants['imbalanced']


def test_summary_is_balanced_minus_imbalanced():
    tool = _tool()
    rows = tool.summarize({
        'vicreg': {
            'balanced': dict(digit_label=40.0, background_label=90.0),
            'imbalanced': dict(digit_label=30.0, background_label=95.5),
        },
        'mae': {'balanced': dict(digit_label=1.0, background_label=2.0)},
    })
    assert rows == [
        dict(method='vicreg', digit_label_balanced=40.0,
             digit_label_imbalanced=30.0, digit_label_delta=10.0,
             background_label_balanced=90.0,
             background_label_imbalanced=95.5,
             background_label_delta=-5.5)
    ]
    table = tool.format_table(rows)
    assert '| vicreg | 40.00 | 30.00 | +10.00 | 90.00 | 95.50 | -5.50 |' \
        in table


def test_main_reuses_finished_runs(tmp_path, monkeypatch, capsys):
    tool = _tool()
    for variant, acc in (('balanced', 50.0), ('imbalanced', 20.0)):
        path = tool.study_configs()['msn'][variant]
        run = tmp_path / osp.splitext(osp.basename(path))[0]
        _log_knn(run, acc, acc + 1, '20260101_000000')
        # an older run of the same config is ignored
        _log_knn(run, 0.0, 0.0, '20250101_000000')

    def no_training(*args, **kwargs):
        raise AssertionError('finished runs must not be retrained')

    monkeypatch.setattr(tool.subprocess, 'run', no_training)
    rows = tool.main(['--work-dir', str(tmp_path), '--methods', 'msn'])
    assert rows[0]['digit_label_delta'] == 30.0
    assert json.loads((tmp_path / 'summary.json').read_text()) == rows
    captured = capsys.readouterr()
    assert '| msn | 50.00 | 20.00 | +30.00 |' in captured.out
    # progress over the study's runs (tqdm, with its ETA field)
    assert 'class-stratified study' in captured.err
    assert '2/2' in captured.err and '<' in captured.err
    with pytest.raises(ValueError, match='--methods must be among'):
        tool.main(['--work-dir', str(tmp_path), '--methods', 'byol'])


def test_read_knn_takes_the_newest_log_and_its_last_evaluation(tmp_path):
    tool = _tool()
    assert tool.read_knn(str(tmp_path)) is None
    _log_knn(tmp_path, 10.0, 20.0, '20260101_000000')
    _log_knn(tmp_path, 30.0, 40.0, '20260102_000000')
    assert tool.read_knn(str(tmp_path)) == dict(digit_label=30.0,
                                                background_label=40.0)


def test_rerun_overwrites_the_old_checkpoints(tmp_path, monkeypatch):
    """tools/train.py refuses a work dir with checkpoints unless told."""
    tool = _tool()
    calls = []

    def fake_training(cmd, check):
        calls.append(cmd)
        run = tmp_path / osp.basename(cmd[cmd.index('--work-dir') + 1])
        _log_knn(run, 1.0, 2.0, f'2026010{len(calls)}_000000')

    monkeypatch.setattr(tool.subprocess, 'run', fake_training)
    monkeypatch.setattr(tool, 'summarize', lambda results: [])
    monkeypatch.setattr(tool, 'format_table', lambda rows: '')
    tool.main(['--work-dir', str(tmp_path), '--methods', 'msn', '--rerun'])
    assert len(calls) == 2  # balanced and imbalanced
    assert all(cmd[-1] == '--overwrite' for cmd in calls)


def test_quick_check_runs_short_and_apart(tmp_path, monkeypatch):
    """--quick: every training gets QUICK_OPTIONS and runs, like the
    summary, under <work-dir>/quick, so that a later full study does not
    take them for its own results."""
    tool = _tool()
    calls = []

    def fake_training(cmd, check):
        calls.append(cmd)
        _log_knn(tmp_path / 'quick' /
                 osp.basename(cmd[cmd.index('--work-dir') + 1]), 1.0, 2.0)

    monkeypatch.setattr(tool.subprocess, 'run', fake_training)
    rows = tool.main(['--work-dir', str(tmp_path), '--methods', 'msn',
                      '--quick'])
    assert len(calls) == 2 and len(rows) == 1
    for cmd in calls:
        assert osp.dirname(cmd[cmd.index('--work-dir') + 1]) == str(
            tmp_path / 'quick')
        assert cmd[cmd.index('--cfg-options') + 1:] == list(
            tool.QUICK_OPTIONS)
        assert 'train_cfg.max_iters=2' in cmd
    assert (tmp_path / 'quick' / 'summary.json').is_file()
    assert not (tmp_path / 'summary.json').exists()
