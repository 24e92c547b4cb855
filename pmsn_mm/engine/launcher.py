"""Distributed set-up for machines without CUDA (gloo backend), one note
instead of mmengine's per-rank thread warnings, and a clean end of
distributed runs."""
import logging
import os
import subprocess
import sys
import warnings

import torch
import torch.distributed as dist
from mmengine.config import Config
from mmengine.logging import print_log

CPU_LAUNCHERS = ('pytorch', 'slurm')
#: mmengine's ``set_multi_processing`` warns this in every rank (OMP, MKL).
MMENGINE_THREAD_NOTE = (r'Setting (OMP|MKL)_NUM_THREADS environment '
                        r'variable for each process to be 1 in default')


def explain_distributed_thread_notes(launcher: str) -> bool:
    """In a distributed run, replace mmengine's two per-rank thread
    warnings (``Setting OMP_NUM_THREADS ... to be 1 in default``) by one
    line of rank 0 saying what they mean here.

    Args:
        launcher: The ``--launcher`` value (nothing happens for ``'none'``).

    Returns:
        True if the warnings were filtered.
    """
    if launcher == 'none':
        return False
    warnings.filterwarnings('ignore', message=MMENGINE_THREAD_NOTE,
                            category=UserWarning,
                            module=r'mmengine\.utils\.dl_utils\.setup_env')
    if int(os.environ.get('RANK', '0')) == 0 and not any(
            k in os.environ for k in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS')):
        print_log(
            'Distributed run: mmengine sets OMP_NUM_THREADS=1 and '
            'MKL_NUM_THREADS=1 for the processes each rank starts (its two '
            'per-rank warnings are not repeated); on a CPU each rank\'s own '
            'torch threads follow the cores the other ranks leave free '
            '(CPUThreadsHook). Set them in the environment to choose.',
            logger='current')
    return True


def _slurm_env_to_torch_env() -> None:
    """Translate SLURM's variables into the ``env://`` ones torch reads."""
    os.environ.setdefault('RANK', os.environ['SLURM_PROCID'])
    os.environ.setdefault('WORLD_SIZE', os.environ['SLURM_NTASKS'])
    os.environ.setdefault('LOCAL_RANK', os.environ.get('SLURM_LOCALID', '0'))
    if 'MASTER_ADDR' not in os.environ:
        node_list = os.environ['SLURM_NODELIST']
        first = subprocess.getoutput(
            f'scontrol show hostname {node_list} | head -n1')
        os.environ['MASTER_ADDR'] = first
    os.environ.setdefault('MASTER_PORT', '29500')


def setup_cpu_distributed(cfg: Config, launcher: str) -> bool:
    """Prepare a distributed run on CPU (mmengine's ``init_dist`` needs
    CUDA): without CUDA and with a launcher, a gloo process group and
    :class:`~pmsn_mm.engine.model_wrappers.DeviceAwareDistributedDataParallel`.

    Args:
        cfg: The training config (updated in place).
        launcher: ``'none'``, ``'pytorch'`` (torchrun) or ``'slurm'``.

    Returns:
        True if the CPU distributed set-up was applied.

    Raises:
        ValueError: For a launcher that cannot run on CPU here.
    """
    if launcher == 'none' or torch.cuda.is_available():
        return False
    if launcher not in CPU_LAUNCHERS:
        raise ValueError(
            f'launcher={launcher!r} is not supported without CUDA; use one '
            f'of {CPU_LAUNCHERS} (tools/dist_train.sh uses pytorch).')
    if launcher == 'slurm':
        _slurm_env_to_torch_env()
    if not dist.is_initialized():
        dist.init_process_group(
            backend='gloo',
            rank=int(os.environ['RANK']),
            world_size=int(os.environ['WORLD_SIZE']))
    print_log(
        f'CUDA unavailable: using the gloo backend (rank {dist.get_rank()} '
        f'of {dist.get_world_size()}).',
        logger='current')
    env_cfg = cfg.setdefault('env_cfg', dict())
    env_cfg.setdefault('dist_cfg', dict())['backend'] = 'gloo'
    wrapper = cfg.get('model_wrapper_cfg') or dict(
        broadcast_buffers=False,
        find_unused_parameters=cfg.get('find_unused_parameters', False))
    if wrapper.get('type', 'MMDistributedDataParallel') in (
            'MMDistributedDataParallel', 'DeviceAwareDistributedDataParallel'):
        wrapper['type'] = 'DeviceAwareDistributedDataParallel'
    cfg.model_wrapper_cfg = wrapper
    return True


def end_distributed() -> bool:
    """Leave the process group at the end of a run (all ranks meet at a
    barrier first, so none leaves while another still communicates).

    Returns:
        True if a process group was destroyed.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return False
    dist.barrier()
    dist.destroy_process_group()
    return True


def exit_after_distributed_run(runner=None) -> None:
    """End a finished distributed process now, without interpreter
    finalization: flush and close the logs and visualizer backends, then
    ``os._exit(0)``.

    Why: gloo's threads destroy completed collectives asynchronously, which
    during ``Py_FinalizeEx`` aborts the rank (SIGABRT), and cannot be joined
    first (``.dev_scripts/count_dist_exit_codes.py``). Only for scripts.

    Args:
        runner: The finished runner, whose visualizer backends are closed.
    """
    if runner is not None:
        runner.visualizer.close()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)
