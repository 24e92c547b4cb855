"""Every shipped config trains 2 iterations (or evaluates, for the kNN and
logistic-regression benchmarks) on real files of its format.

One test per file under ``configs/`` (a new config is covered by existing),
through ``tools/train.py`` (``tools/test.py``), on the sample data of
``tools/dataset_converters/make_sample_data.py`` (decodable JPEGs and PNGs,
the awkward ones included, in each dataset's own layout). Only sizes are
shrunk (tests/_config_runs.py); pipelines, views, samplers, algorithms,
heads, losses, priors and hooks are the config's.
"""
import importlib.util
import math
import os.path as osp

import pytest
from mmengine.config import Config

from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.engine.optimizers import DeviceAwareAmpOptimWrapper
from tests._config_runs import (RUNNABLE, config_id, save_backbone_checkpoint,
                                shrink)
from tests._configs import REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


def _tool(name):
    spec = importlib.util.spec_from_file_location(
        f'tool_{name}', osp.join(REPO, 'tools', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='session')
def sample_root(tmp_path_factory):
    """A working directory whose data/ holds every sample dataset."""
    root = tmp_path_factory.mktemp('sample')
    make_sample_data(str(root / 'data'))
    return root


def test_every_config_is_collected():
    names = {config_id(p) for p in RUNNABLE}
    assert len(names) >= 87
    assert not any(n.startswith('_base_') for n in names)


@pytest.mark.parametrize('path', RUNNABLE, ids=config_id)
def test_config_trains_two_iterations(path, sample_root, tmp_path,
                                      monkeypatch):
    monkeypatch.chdir(sample_root)
    cfg = Config.fromfile(path)
    ckpt = None
    if cfg.model.type == 'ImageClassifier':  # a probe of a frozen encoder
        ckpt = str(tmp_path / 'encoder.pth')
        shrunk = shrink(Config.fromfile(path), str(tmp_path / 'unused'))
        save_backbone_checkpoint(shrunk, ckpt)
    shrink(cfg, str(tmp_path / 'work'), ckpt)
    config = str(tmp_path / osp.basename(path))
    cfg.dump(config)
    if cfg.get('train_dataloader') is None:  # evaluates a checkpoint
        metrics = _tool('test').main([config, ckpt])
        assert metrics and all(0 <= v <= 100 for k, v in metrics.items()
                               if k.endswith('top1'))
        return
    runner = _tool('train').main([config, '--auto-scale-lr'])
    assert runner.iter == 2
    if '-amp-' in osp.basename(path):
        # mixed precision on the CPU too: the config's bf16, no loss scaler
        assert isinstance(runner.optim_wrapper, DeviceAwareAmpOptimWrapper)
        assert str(runner.optim_wrapper.cast_dtype) == 'torch.bfloat16'
    # --auto-scale-lr: lr x (batch x 1 process) / the recipe's base batch
    scaled = cfg.optim_wrapper.optimizer.lr * (
        cfg.train_dataloader.batch_size / cfg.auto_scale_lr.base_batch_size)
    # the optimizer's groups (the wrapper's param_groups add an unscaled
    # copy of the defaults, which mmengine logs as `lr`)
    initial = [g['initial_lr']
               for g in runner.optim_wrapper.optimizer.param_groups]
    assert max(initial) == pytest.approx(scaled, rel=1e-9)
    loss = runner.message_hub.get_scalar('train/loss').current()
    assert math.isfinite(loss)
    assert osp.isfile(osp.join(runner.work_dir, 'last_checkpoint'))
    if runner.val_loop is not None and cfg.get('val_evaluator'):
        metrics = {k: v for k, v in runner.message_hub.log_scalars.items()
                   if k.startswith('val/')}
        assert metrics, 'the val loop ran and logged its metrics'
