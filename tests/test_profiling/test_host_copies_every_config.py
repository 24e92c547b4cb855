"""Every pretraining config, one training step at batch 2 and 4 (narrowed
encoders, the batch made by the config's own pipeline and collate
function): no blocking host-to-device copy in any phase. The batch's own
tensors move ``non_blocking`` once each from pinned memory (the config's
``pin_memory``, which a CPU run models: a ``non_blocking`` copy from
pageable memory is synchronous on CUDA and counts as blocking)."""
import logging
import os
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.logging import MMLogger

from pmsn_mm.datasets.sample_data import make_sample_data
from tests._config_runs import RUNNABLE, config_id, shrink_model
from tests._profiling import rule_failure
from tests._profiling.step_profiler import count_phases

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

PRETRAINING = [p for p in RUNNABLE if f'{os.sep}benchmarks{os.sep}' not in p]


@pytest.fixture(scope='module')
def sample_cwd(tmp_path_factory):
    """A working directory with the sample iNat18 annotations and image
    folder (the class and image-folder priors count them at build time)."""
    root = tmp_path_factory.mktemp('copies')
    make_sample_data(str(root / 'data'), formats=('inat18', 'imagenet'))
    old = os.getcwd()
    os.chdir(str(root))
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    yield str(root)
    os.chdir(old)


def _counts(path: str, batch: int, **loader) -> dict:
    torch.manual_seed(0)
    cfg = Config.fromfile(path)
    cfg.train_dataloader.update(loader)
    shrink_model(cfg)
    return count_phases(cfg, batch)


def test_every_pretraining_config_is_collected():
    assert len(PRETRAINING) >= 60


@pytest.mark.parametrize('path', PRETRAINING, ids=config_id)
def test_no_blocking_copy_at_two_batch_sizes(path, sample_cwd):
    cfg = Config.fromfile(path)
    assert cfg.train_dataloader.get('pin_memory') is True, rule_failure(
        f'{config_id(path)}: train_dataloader.pin_memory is not True (the '
        'batch upload blocks)')
    uploads = {}
    for batch in (2, 4):
        for phase, c in _counts(path, batch).items():
            assert c['h2d'] == 0, rule_failure(
                f'{config_id(path)} {phase} at batch {batch}: {c["h2d"]} '
                f'blocking host-to-device copies ({c["h2d_sites"]})')
            if phase != 'views':
                assert c['h2d_batch'] == 0, (phase, batch)
            else:
                uploads[batch] = c['h2d_batch']
    assert uploads[2] == uploads[4] >= 1, uploads


def test_a_loader_without_pin_memory_blocks(sample_cwd):
    """The same config with pin_memory=False: every upload of the batch is
    a blocking copy (from pageable memory)."""
    path = next(p for p in PRETRAINING if osp.basename(p) ==
                'pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py')
    pinned = _counts(path, 2)['views']
    pageable = _counts(path, 2, pin_memory=False)['views']
    assert (pinned['h2d'], pinned['h2d_batch']) == (0, 2)
    assert (pageable['h2d'], pageable['h2d_batch']) == (2, 0)
    assert all('non_blocking from pageable memory' in site
               for site in pageable['h2d_sites'])
