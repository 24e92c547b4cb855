"""setup_cpu_distributed: gloo process group + CPU DDP wrapper without CUDA."""
import os
from unittest import mock

import pytest
import torch.distributed as dist
from mmengine.config import Config

from pmsn_mm.engine.launcher import end_distributed, setup_cpu_distributed
from tests._dist import free_port


def test_no_launcher_changes_nothing():
    cfg = Config(dict(env_cfg=dict(dist_cfg=dict(backend='nccl'))))
    assert setup_cpu_distributed(cfg, 'none') is False
    assert cfg.env_cfg.dist_cfg.backend == 'nccl'
    assert 'model_wrapper_cfg' not in cfg


def test_unsupported_launcher_on_cpu():
    with mock.patch('torch.cuda.is_available', return_value=False):
        with pytest.raises(ValueError, match="launcher='mpi'"):
            setup_cpu_distributed(Config(dict()), 'mpi')


def test_pytorch_launcher_on_cpu_uses_gloo_and_cpu_ddp():
    port = free_port()
    env = dict(RANK='0', WORLD_SIZE='1', LOCAL_RANK='0',
               MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    cfg = Config(dict(env_cfg=dict(dist_cfg=dict(backend='nccl')),
                      find_unused_parameters=True))
    with mock.patch.dict(os.environ, env), \
            mock.patch('torch.cuda.is_available', return_value=False):
        try:
            assert setup_cpu_distributed(cfg, 'pytorch') is True
            assert dist.is_initialized()
            assert dist.get_backend() == 'gloo'
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
    assert cfg.env_cfg.dist_cfg.backend == 'gloo'
    assert cfg.model_wrapper_cfg == dict(
        type='DeviceAwareDistributedDataParallel',
        broadcast_buffers=False,
        find_unused_parameters=True)


def test_end_distributed_leaves_the_process_group():
    """A run ends by destroying its gloo group (an exit with a live group
    sometimes aborts a rank: .dev_scripts/count_dist_exit_codes.py)."""
    assert end_distributed() is False  # nothing to end
    dist.init_process_group(
        'gloo', init_method=f'tcp://127.0.0.1:{free_port()}', rank=0,
        world_size=1)
    assert end_distributed() is True
    assert not dist.is_initialized()


def test_exit_after_a_distributed_run_skips_interpreter_finalization(
        tmp_path):
    """The process ends with exit code 0, its log flushed and its visualizer
    closed, and without running interpreter finalization (where gloo's
    worker threads could abort it): an atexit handler never runs."""
    import subprocess
    import sys
    code = f'''
import atexit, logging, sys
from types import SimpleNamespace
from pmsn_mm.engine.launcher import exit_after_distributed_run
log = logging.getLogger('run')
log.addHandler(logging.FileHandler({str(tmp_path / 'run.log')!r}))
log.warning('finished')
atexit.register(lambda: open({str(tmp_path / 'atexit')!r}, 'w').close())
runner = SimpleNamespace(visualizer=SimpleNamespace(
    close=lambda: open({str(tmp_path / 'closed')!r}, 'w').close()))
print('last line', flush=False)
exit_after_distributed_run(runner)
print('never printed')
'''
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith('last line')  # flushed
    assert (tmp_path / 'run.log').read_text() == 'finished\n'
    assert (tmp_path / 'closed').exists()
    assert not (tmp_path / 'atexit').exists()


def test_mmengine_thread_notes_are_explained_once(monkeypatch):
    """A distributed run (a launcher without OMP_NUM_THREADS, e.g. Slurm):
    mmengine's two per-rank warnings are filtered, rank 0 logs one line."""
    import warnings

    from mmengine.utils.dl_utils import set_multi_processing

    from pmsn_mm.engine import launcher
    from pmsn_mm.engine.launcher import explain_distributed_thread_notes
    for key in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
        # set then deleted: restored (or removed) after the test, whatever
        # mmengine writes into os.environ below
        monkeypatch.setenv(key, '2')
        monkeypatch.delenv(key)
    monkeypatch.setenv('RANK', '0')
    logged = []
    monkeypatch.setattr(launcher, 'print_log',
                        lambda msg, *a, **k: logged.append(msg))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter('always')
        assert explain_distributed_thread_notes('none') is False
        assert explain_distributed_thread_notes('slurm') is True
        set_multi_processing(distributed=True)
    assert not [w for w in seen if 'NUM_THREADS' in str(w.message)]
    assert [m for m in logged if m.startswith('Distributed run: mmengine sets '
                                              'OMP_NUM_THREADS=1')]
