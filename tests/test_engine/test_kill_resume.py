"""kill -9 + ``--resume`` ends bit-identical to the uninterrupted run (a kill
while a checkpoint is written: tests/test_tools/test_fault_matrix.py).

The tiny PMSN config draws random numbers everywhere a real run does (a
per-sample random flip, the batched views, patch-drop masks with
mask_ratio > 0, the class-stratified sampler) and runs with deterministic
kernels and ``num_workers=0``. RNGStateHook and the atomic checkpoint
backend come from ``configs/_base_/default_runtime.py``.
"""
import os
import os.path as osp
import signal
import subprocess
import sys

import pytest
import torch

from tests._configs import REPO, TINY_PMSN, write_config

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TRAIN = osp.join(REPO, 'tools', 'train.py')


def _env() -> dict:
    # the crash configs import tests._kill_hooks
    return dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS='1')


def _train(args, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, TRAIN, *args], cwd=str(tmp_path),
                          env=_env(), capture_output=True, text=True,
                          timeout=300)


def _crash_config(tmp_path, hook: str, at: int) -> str:
    return write_config(
        tmp_path, TINY_PMSN + f"""
custom_imports = dict(imports=['pmsn_mm', 'tests._kill_hooks'],
                      allow_failed_imports=False)
custom_hooks = [dict(type='{hook}', at={at})]
""", f'crash_{hook}.py')


@pytest.fixture(scope='module')
def full_run(tmp_path_factory):
    """The uninterrupted run: (config path, work dir)."""
    tmp_path = tmp_path_factory.mktemp('full')
    config = write_config(tmp_path, TINY_PMSN)
    work_dir = str(tmp_path / 'full')
    out = _train([config, '--work-dir', work_dir], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    return config, work_dir


def _assert_same_final_state(work_a, work_b):
    a = torch.load(osp.join(work_a, 'iter_6.pth'))
    b = torch.load(osp.join(work_b, 'iter_6.pth'))
    assert a['meta']['iter'] == b['meta']['iter'] == 6
    assert a['state_dict'].keys() == b['state_dict'].keys()
    # online encoder, EMA target encoder, prototypes
    assert any(k.startswith('target_') for k in a['state_dict'])
    assert 'head.prototypes' in a['state_dict']
    for key, value in a['state_dict'].items():
        assert torch.equal(value, b['state_dict'][key]), key
    for pid, state in a['optimizer']['state'].items():
        for name, value in state.items():
            assert torch.equal(value, b['optimizer']['state'][pid][name])


def test_sigkill_after_checkpoint_then_resume_is_bit_identical(
        tmp_path, full_run):
    config, full = full_run

    # killed during iteration 3's hooks, after iter_2.pth was written
    crashed = str(tmp_path / 'crashed')
    out = _train([_crash_config(tmp_path, 'SIGKILLAfterIterHook', 3),
                  '--work-dir', crashed], tmp_path)
    assert out.returncode == -signal.SIGKILL
    names = os.listdir(crashed)
    assert 'iter_2.pth' in names and 'last_checkpoint' in names
    assert 'iter_4.pth' not in names

    out = _train([config, '--work-dir', crashed, '--resume'], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert f'--resume: resuming from {crashed}/iter_2.pth' in log
    assert 'resumed epoch: 0, iter: 2' in log
    assert 'RNGStateHook: restoring the random states of 1 process(es) ' \
        'saved at iteration 2' in log
    _assert_same_final_state(full, crashed)
