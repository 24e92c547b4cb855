"""tools/linear_probe_cached.py: same probes as online training, faster.

The checks and classes it calls are tested in
``tests/test_tools/test_cached_probe.py`` and ``test_cached_features.py``.
"""
import importlib.util
import os
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

from pmsn_mm.utils.refusal import NothingToDo
from tests._configs import REPO
from tests._linear_probe_toy import (save_pmsn_vit_checkpoint,
                                     write_toy_probe_config)
from tests._tools import import_beside_tools

cached_probe = import_beside_tools('tools/cached_probe.py')

ZERO_INIT = dict(type='Constant', layer='Linear', val=0.0, bias=0.0)
#: a larger lr than the VISSL 0.01, so that a different batch order moves
#: the probes far more than the 1e-4 agreement asserted below
TOY_OPTIONS = ['optim_wrapper.optimizer.lr=0.5', 'log_level=WARNING']


def _tool():
    spec = importlib.util.spec_from_file_location(
        'linear_probe_cached', osp.join(REPO, 'tools',
                                        'linear_probe_cached.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='module')
def toy(tmp_path_factory):
    """A concat-4-CLS probe config (BN probe included) on 64 toy images."""
    root = tmp_path_factory.mktemp('cached')
    ckpt = str(root / 'pmsn.pth')
    save_pmsn_vit_checkpoint(ckpt)
    config = write_toy_probe_config(
        root, 'vit-concat4cls', ckpt, max_epochs=2, num_train=64,
        num_val=32, batch_size=16, head_init=ZERO_INIT)
    return config, ckpt


def _head_state(state):
    return {k: v for k, v in state.items() if k.startswith('head.')}


def test_cached_mode_equals_online_mode(toy, tmp_path, capsys):
    config, ckpt = toy
    # online: tools/train.py's Runner, 2 epochs x 4 iterations
    cfg = Config.fromfile(config)
    cfg.optim_wrapper.optimizer.lr = 0.5  # as TOY_OPTIONS
    cfg.log_level = 'WARNING'
    cfg.work_dir = str(tmp_path / 'online')
    runner = Runner.from_cfg(cfg)
    runner.train()
    online_metrics = runner.val()
    online = {k: v.detach().clone() for k, v in _head_state(
        runner.model.state_dict()).items()}
    # cached: features once, the same loop on them
    result = _tool().main([
        config, ckpt, '--work-dir', str(tmp_path / 'cached'),
        '--online-iters', '1', '--cfg-options', *TOY_OPTIONS
    ])
    cached = _head_state(
        torch.load(result['checkpoint'], weights_only=True)['state_dict'])
    # 2 Linear layers (4), BN statistics (3) and its affine scale + shift
    assert set(cached) == set(online) and len(online) == 9
    for key, value in online.items():
        torch.testing.assert_close(cached[key], value, rtol=0, atol=1e-4)
    # the probes did move (far beyond the tolerance), BN statistics too
    assert online['head.probes.linear.weight'].abs().max() > 1e-2
    assert online['head.probes.bn_linear.bn.num_batches_tracked'] == 8
    assert set(result['metrics']) == set(online_metrics)
    for key, value in online_metrics.items():
        assert result['metrics'][key] == pytest.approx(value, abs=1e-4)
    # the speed-up is measured and printed
    assert result['timings']['online_s_per_iter'] > 0
    assert result['speedup'] > 0
    assert 'faster than online mode' in capsys.readouterr().out
    # negative control: another seed (batch order) gives other probes
    other = _tool().main([
        config, ckpt, '--work-dir', str(tmp_path / 'seed1'),
        '--online-iters', '0', '--cfg-options', *TOY_OPTIONS,
        'randomness.seed=1'
    ])
    other_w = torch.load(other['checkpoint'], weights_only=True)[
        'state_dict']['head.probes.linear.weight']
    assert (other_w - online['head.probes.linear.weight']).abs().max() > 1e-3


def test_the_saved_probe_evaluates_with_tools_test(toy, tmp_path):
    """probe_cached.pth holds backbone + neck + probes for tools/test.py."""
    config, ckpt = toy
    result = _tool().main([
        config, ckpt, '--work-dir', str(tmp_path), '--online-iters', '0',
        '--cfg-options', *TOY_OPTIONS
    ])
    spec = importlib.util.spec_from_file_location(
        'test_tool', osp.join(REPO, 'tools', 'test.py'))
    test_tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(test_tool)
    metrics = test_tool.main([config, result['checkpoint'], '--work-dir',
                              str(tmp_path / 'test')])
    for key, value in result['metrics'].items():
        assert metrics[key] == pytest.approx(value, abs=1e-4)


def test_random_train_pipeline_is_refused(toy, tmp_path):
    config, ckpt = toy
    flip = write_toy_probe_config(
        tmp_path, 'vit-lastcls', ckpt,
        train_pipeline=[dict(type='RandomFlip', prob=0.5),
                        dict(type='PackInputs')])
    with pytest.raises(ValueError, match=r"train pipeline .*\['RandomFlip'\]"):
        _tool().main([flip, ckpt, '--work-dir', str(tmp_path)])


def test_arguments(tmp_path):
    tool = _tool()
    with pytest.raises(ValueError, match='--online-iters must be >= 0'):
        tool.main(['cfg.py', 'ckpt', '--online-iters', '-1'])
    with pytest.raises(SystemExit) as exc:
        tool.main(['--help'])
    assert exc.value.code == 0


def _cached(toy, work_dir, *flags, options=()):
    config, ckpt = toy
    return _tool().main([
        config, ckpt, '--work-dir', work_dir, '--online-iters', '0', *flags,
        '--cfg-options', *TOY_OPTIONS, *options
    ])


def _probes(path):
    return _head_state(torch.load(path, weights_only=True)['state_dict'])


def _mtimes(folder):
    return {name: os.stat(osp.join(folder, name)).st_mtime_ns
            for name in os.listdir(folder)}


def test_the_work_dir_is_decided_as_for_tools_train(toy, tmp_path,
                                                    monkeypatch):
    """pmsn_mm.engine.resume decides, before any feature is extracted: a
    run into a work dir with checkpoints is refused, a finished one has
    nothing to do, --resume continues the probes' own checkpoint exactly,
    --overwrite trains again from epoch 0."""
    work = str(tmp_path / 'work')
    every_epoch = ['default_hooks.checkpoint.interval=1',
                   'default_hooks.checkpoint.max_keep_ckpts=2']
    first = _cached(toy, work, options=every_epoch)
    uninterrupted = _probes(first['checkpoint'])
    assert {'epoch_1.pth', 'epoch_2.pth', 'last_checkpoint',
            'probe_cached.pth'} <= set(os.listdir(work))
    extracted = []
    features = cached_probe._features
    monkeypatch.setattr(cached_probe, '_features', lambda *args: (
        extracted.append(len(args[1].dataset)), features(*args))[1])
    before = _mtimes(work)
    with pytest.raises(FileExistsError) as info:
        _cached(toy, work)
    assert str(info.value).startswith(
        f'The work dir {work} already holds checkpoints of an earlier run '
        '(epoch_1.pth, epoch_2.pth, last_checkpoint), which this run would '
        f'overwrite. Pass --resume to continue from {work}/epoch_2.pth;')
    with pytest.raises(NothingToDo, match=f'the run in {work} already '
                       'finished: epoch_2.pth is at epoch 2 of 2.'):
        _cached(toy, work, '--resume')
    assert extracted == [] and _mtimes(work) == before
    # stopped after epoch 1: --resume trains epoch 2 only, to the same probes
    after_one = _probes(osp.join(work, 'epoch_1.pth'))
    assert (after_one['head.probes.linear.weight'] -
            uninterrupted['head.probes.linear.weight']).abs().max() > 1e-3
    os.remove(osp.join(work, 'epoch_2.pth'))
    os.remove(osp.join(work, 'last_checkpoint'))
    resumed = _cached(toy, work, '--resume', options=every_epoch)
    assert extracted == [64, 32]  # train and val features, once
    assert _mtimes(work)['epoch_1.pth'] == before['epoch_1.pth']
    for key, value in _probes(resumed['checkpoint']).items():
        torch.testing.assert_close(value, uninterrupted[key], rtol=0,
                                   atol=1e-6)
    # --overwrite: from epoch 0, the earlier checkpoints gone once it saved
    again = _cached(toy, work, '--overwrite', options=every_epoch)
    assert _mtimes(work)['epoch_1.pth'] != before['epoch_1.pth']
    assert not [n for n in os.listdir(work) if n.startswith('overwritten_')]
    for key, value in _probes(again['checkpoint']).items():
        torch.testing.assert_close(value, uninterrupted[key], rtol=0,
                                   atol=1e-6)
