"""What is saved is what the user wrote: the work dir's config dump and
every checkpoint's ``meta['cfg']`` hold the config as written (plus the
user's ``--cfg-options``), never ``PMSNRunner``'s adaptations to the machine
it ran on — those are in the run itself and logged in one line each.

A GPU config's settings (``pin_memory``, 8 workers, persistent workers)
go through a CPU run here: the run uses what fits the machine, and
reloading the dump — what a user does to reproduce the run on a GPU node —
gives the config's own settings back. The precision is no adaptation: the
config's ``DeviceAwareAmpOptimWrapper`` and its ``dtype`` run as written.
"""
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.registry import RUNNERS

from pmsn_mm.engine import loaders
from pmsn_mm.engine.optimizers import DeviceAwareAmpOptimWrapper
from pmsn_mm.engine.runners.pmsn_runner import PMSNRunner
from tests._configs import TINY_PMSN, write_config

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

GPU_SETTINGS = """
train_dataloader.update(num_workers=8, pin_memory=True,
                        persistent_workers=True)
optim_wrapper = dict(type='DeviceAwareAmpOptimWrapper', dtype='bfloat16',
                     loss_scale='dynamic',
                     optimizer=dict(type='AdamW', lr=1e-3,
                                    weight_decay=0.05))
train_cfg = dict(type='IterBasedTrainLoop', max_iters=2)
"""


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp('saved')
    config = write_config(tmp_path, TINY_PMSN + GPU_SETTINGS, 'gpu_cfg.py')
    cfg = Config.fromfile(config)
    cfg.work_dir = str(tmp_path / 'work')
    cfg.merge_from_dict({'model.head.temperature': 0.2})  # --cfg-options
    with pytest.MonkeyPatch.context() as patch:  # a CPU machine anywhere
        patch.setattr(loaders, 'accelerator_available', lambda: False)
        runner = RUNNERS.build(cfg)  # runner_type='PMSNRunner': ours
    assert isinstance(runner, PMSNRunner)
    runner.train()
    yield runner, cfg
    # the config's persistent loader workers stop with the module, not at
    # the test process's exit (where their shutdown can be interrupted);
    # torch has no public call for it
    iterator = runner.train_dataloader._iterator
    if iterator is not None:
        iterator._shutdown_workers()


def test_the_run_is_fitted_to_the_machine(run):
    runner, _ = run
    loader = runner.train_dataloader
    assert loader.num_workers < 8 and not loader.pin_memory
    assert isinstance(runner.optim_wrapper, DeviceAwareAmpOptimWrapper)
    assert runner.optim_wrapper.cast_dtype == torch.bfloat16  # as written


def test_the_dump_and_the_checkpoint_hold_the_config_as_written(run):
    runner, cfg = run
    dump = Config.fromfile(osp.join(runner.work_dir, 'gpu_cfg.py'))
    meta = torch.load(osp.join(runner.work_dir, 'iter_2.pth'),
                      weights_only=True)['meta']
    saved = Config.fromstring(meta['cfg'], '.py')
    for config in (dump, saved):
        loader = config.train_dataloader
        assert loader.num_workers == 8
        assert loader.pin_memory is True
        assert loader.persistent_workers is True
        assert config.optim_wrapper.type == 'DeviceAwareAmpOptimWrapper'
        assert config.optim_wrapper.dtype == 'bfloat16'
        assert config.model.head.temperature == 0.2  # the user's option
        assert 'model_wrapper_cfg' not in config
        assert config.get('env_cfg', {}).get('dist_cfg', {}).get(
            'backend') == cfg.env_cfg.dist_cfg.backend


def test_each_adaptation_is_logged_in_one_line(run):
    runner, _ = run
    (log,) = glob.glob(osp.join(runner.log_dir, '*.log'))
    with open(log) as f:
        lines = f.read().splitlines()
    fitted = [line for line in lines if 'Dataloaders fitted' in line]
    assert len(fitted) == 1
    assert 'num_workers 8 ->' in fitted[0]
    assert 'pin_memory True -> False' in fitted[0]
    assert not any('optim_wrapper' in line and ' runs as ' in line
                   for line in lines)  # the precision is not adapted
