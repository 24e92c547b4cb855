"""2 gloo ranks: --resume replays both ranks' random numbers exactly."""
import os
import os.path as osp
import subprocess

import pytest
import torch

from tests._configs import REPO, TINY_PMSN, write_config
from tests._dist import free_port

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

# per-rank batch 4 (global 8, K=2); different random streams per rank
OPTIONS = [
    '--cfg-options', 'train_dataloader.batch_size=4',
    'randomness.diff_rank_seed=True'
]


def _dist_train(tmp_path, *args):
    env = dict(os.environ, PORT=str(free_port()), OMP_NUM_THREADS='1')
    out = subprocess.run(
        ['bash', osp.join(REPO, 'tools', 'dist_train.sh'), *args, *OPTIONS],
        cwd=str(tmp_path), env=env, capture_output=True, text=True,
        timeout=300)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    return out.stdout + out.stderr


def test_two_rank_resume_is_bit_identical(tmp_path):
    cfg = write_config(tmp_path, TINY_PMSN)
    full, resumed = str(tmp_path / 'full'), str(tmp_path / 'resumed')
    _dist_train(tmp_path, cfg, '2', '--work-dir', full)
    saved = torch.load(osp.join(full, 'iter_2.pth'))['rng_states']
    assert len(saved) == 2
    assert not torch.equal(saved[0]['torch'], saved[1]['torch'])

    log = _dist_train(tmp_path, cfg, '2', '--work-dir', resumed, '--resume',
                      osp.join(full, 'iter_2.pth'))
    assert 'RNGStateHook: restoring the random states of 2 process(es) ' \
        'saved at iteration 2.' in log
    a = torch.load(osp.join(full, 'iter_6.pth'))['state_dict']
    b = torch.load(osp.join(resumed, 'iter_6.pth'))['state_dict']
    for key in a:
        assert torch.equal(a[key], b[key]), key
