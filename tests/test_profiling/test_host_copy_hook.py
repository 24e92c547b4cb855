"""HostCopyHook counts the host-to-device copies of mmengine's real training
loop (hooks, logger, guard included): none besides the batch's own upload
in a steady-state iteration of the CPU toy config and of the iNat18 config
(narrowed encoder, sample data)."""
import os
import os.path as osp
import subprocess
import sys

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

from pmsn_mm.datasets.sample_data import make_sample_data
from tests._config_runs import shrink
from tests._configs import CONFIGS, REPO
from tests._profiling import rule_failure
from tests._profiling.host_copies import HostCopyHook

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TOY = osp.join('pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
INAT18 = osp.join('pmsn',
                  'pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py')


@pytest.fixture(scope='module')
def sample_root(tmp_path_factory):
    """A working directory with the sample iNat18 files."""
    root = tmp_path_factory.mktemp('host_copies')
    make_sample_data(str(root / 'data'), formats=('inat18', ))
    old = os.getcwd()
    os.chdir(str(root))
    yield str(root)
    os.chdir(old)


def _run(config: str, work_dir: str, batch: int) -> HostCopyHook:
    cfg = shrink(Config.fromfile(osp.join(CONFIGS, config)), work_dir)
    cfg.train_dataloader.batch_size = batch  # 2 iterations (shrink)
    cfg.train_cfg.pop('val_interval', None)
    cfg.train_cfg.pop('val_begin', None)
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    cfg.custom_hooks = list(cfg.get('custom_hooks') or []) + [
        dict(type='HostCopyHook')]
    runner = Runner.from_cfg(cfg)
    runner.train()
    hooks = [h for h in runner.hooks if isinstance(h, HostCopyHook)]
    assert len(hooks) == 1 and len(hooks[0].iters) == 2
    return hooks[0]


@pytest.mark.parametrize('config', [TOY, INAT18])
@pytest.mark.parametrize('batch', [2, 4])
def test_real_loop_uploads_only_the_batch(sample_root, tmp_path, config,
                                          batch):
    hook = _run(config, str(tmp_path), batch)
    second = hook.iters[1]
    for phase, c in second.items():
        assert c['blocking'] == 0, rule_failure(
            f'{config} batch {batch}, iteration 2, {phase}: {c["blocking"]} '
            f'blocking host-to-device copies ({c["sites"]})')
    # the batch: its image tensor (and a padded batch's sizes), once, in
    # the data pre-processor; the same number at any batch size
    assert set(p for p, c in second.items() if c['batch']) == {'views'}
    assert second['views']['batch'] == (2 if config == INAT18 else 1)


def test_the_hook_sees_a_per_sample_upload(sample_root, tmp_path,
                                           monkeypatch):
    """A data pre-processor that moves the data samples one by one (as
    mmengine's ``cast_data`` does) shows one blocking copy per image."""
    from pmsn_mm.models import BatchAugmentPreprocessor
    forward = BatchAugmentPreprocessor.forward

    def per_sample(self, data, training=False):
        for sample in data['data_samples']:
            sample.to(self.device)
        return forward(self, data, training)

    monkeypatch.setattr(BatchAugmentPreprocessor, 'forward', per_sample)
    hook = _run(TOY, str(tmp_path), 4)
    for it in hook.iters:
        assert it['views']['blocking'] >= 4  # one gt_label per image
    assert torch.overrides._get_current_function_mode_stack() == []


def test_a_config_from_a_checkout_imports_the_hook(tmp_path):
    """``import pmsn_mm`` does not register HostCopyHook (test code); the
    ``custom_imports`` line of tests/_profiling/host_copies.py's docstring
    does, in a process started at the repository root."""
    cfg = tmp_path / 'with_host_copy_hook.py'
    cfg.write_text(
        "custom_imports = dict(imports=['pmsn_mm', "
        "'tests._profiling.host_copies'], allow_failed_imports=False)\n"
        "custom_hooks = [dict(type='HostCopyHook')]\n")
    script = (
        'import sys\n'
        'import pmsn_mm\n'
        'from mmpretrain.registry import HOOKS\n'
        "assert 'HostCopyHook' not in HOOKS.module_dict\n"
        'from mmengine.config import Config\n'
        'cfg = Config.fromfile(sys.argv[1])\n'
        "print(HOOKS.get(cfg.custom_hooks[0]['type']).__module__)\n")
    out = subprocess.run([sys.executable, '-c', script, str(cfg)],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ['tests._profiling.host_copies']
