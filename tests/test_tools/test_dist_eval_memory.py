"""Distributed kNN / logistic-regression evaluation fits in memory (issue 25).

The frozen-feature metrics gather every rank's results through mmengine's
``collect_results`` (a pickle per rank). When each kept feature was a view
of its batch's (B, T, D) backbone output, every sample pickled the whole
batch: the toy run's final kNN validation grew both ranks to ~11 GB. Here
``tools/dist_train.sh`` (its final kNN validation) and ``tools/dist_test.sh``
(the kNN and logistic-regression benchmarks) run with 2 gloo processes, and
the peak RSS of the largest process stays within about twice that of the
same run in one process.

The peak is ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a small wrapper
process that runs the launch script: the largest peak among all its
waited-for descendants (the ranks, torchrun, bash), which the pytest
process could not tell apart from those of earlier tests.
"""
import os
import os.path as osp
import re
import subprocess
import sys
from typing import Dict, List, Tuple

import pytest
import torch
from mmengine.config import Config
from mmengine.model import BaseModel, is_model_wrapper
from torch import nn

from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.engine.model_wrappers import DeviceAwareDistributedDataParallel
from pmsn_mm.engine.runners.pmsn_runner import distributed_wrapper
from tests._config_runs import save_backbone_checkpoint, shrink
from tests._configs import CONFIGS, REPO
from tests._dist import free_port

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TOY = osp.join(CONFIGS, 'pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
BENCH = osp.join(CONFIGS, 'pmsn', 'benchmarks')

#: Runs the command in argv, prints the peak RSS (KiB on Linux) of its
#: largest waited-for descendant, exits with the command's status.
_PEAK_RSS = (
    'import resource, subprocess, sys\n'
    'code = subprocess.run(sys.argv[1:]).returncode\n'
    'peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n'
    'print(f"PEAK_RSS_KIB={peak}", flush=True)\n'
    'sys.exit(code)\n')

#: The toy run, CPU-sized: 4 iterations of batch 32, then the config's
#: final kNN validation (both labels) on 512 memory + 256 query images in
#: val batches of 256 (before the fix: 2.5 MB pickled per sample and
#: metric, ~1.5 GB gathered on rank 0).
TOY_OPTIONS = [
    'train_cfg.max_iters=4', 'train_dataloader.batch_size=32',
    'train_dataloader.dataset.num_samples=512',
    'val_dataloader.dataset.memory.num_samples=512',
    'val_dataloader.dataset.query.num_samples=256'
]
#: Bound of the 2-process toy run's peak RSS: about 2x the single-process
#: peak. Measured with the wrapper above on 2 CPU cores (torch 2.14,
#: mmengine 0.10.7): ``python tools/train.py TOY --cfg-options
#: TOY_OPTIONS`` peaks at 1020-1050 MiB (before and after the fix; ~720
#: MiB of it is importing torch + mmpretrain); ``dist_train.sh TOY 2`` at
#: 990 MiB after the fix and 3016 MiB before it.
TRAIN_PEAK_MIB = 2100
#: Bound of the 2-process benchmark runs (kNN and logistic regression on
#: the shrunk ImageNet sample set): about 2x the single-process peak.
#: ``python tools/test.py CONFIG CKPT`` peaks at 915 MiB (kNN) and 980 MiB
#: (logistic regression); ``dist_test.sh CONFIG CKPT 2`` at 790 and 850
#: MiB.
TEST_PEAK_MIB = 2000


def _launch(script: str, args: List[str], cwd: str,
            timeout: int = 300) -> Tuple[str, float]:
    """Run ``bash tools/<script> ARGS`` with 2 gloo ranks on 1 thread each.

    Returns:
        The output (stdout + stderr) and the peak RSS in MiB.
    """
    env = dict(os.environ, PORT=str(free_port()), OMP_NUM_THREADS='1',
               CUDA_VISIBLE_DEVICES='')  # gloo on CPU, as on a CPU machine
    out = subprocess.run(
        [sys.executable, '-c', _PEAK_RSS, 'bash',
         osp.join(REPO, 'tools', script), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    peak = re.findall(r'^PEAK_RSS_KIB=(\d+)$', out.stdout, re.M)
    assert peak, log[-2000:]
    return log, int(peak[-1]) / 1024


def test_dist_train_final_knn_validation_fits_in_memory(tmp_path):
    work_dir = str(tmp_path / 'work')
    log, peak_mib = _launch('dist_train.sh', [
        TOY, '2', '--work-dir', work_dir, '--cfg-options', *TOY_OPTIONS
    ], cwd=str(tmp_path))
    assert 'using the gloo backend (rank 0 of 2)' in log
    assert osp.isfile(osp.join(work_dir, 'iter_4.pth'))
    assert re.search(r'Final validation \(iteration 4\): knn_digit/top1: '
                     r'[\d.]+\s+knn_background/top1: [\d.]+', log), log[-3000:]
    print(f'dist_train.sh peak RSS: {peak_mib:.0f} MiB')
    assert peak_mib <= TRAIN_PEAK_MIB, (
        f'a rank peaked at {peak_mib:.0f} MiB (bound {TRAIN_PEAK_MIB})')


@pytest.fixture(scope='module')
def imagenet_root(tmp_path_factory) -> Dict[str, str]:
    """A working dir whose data/ holds the ImageNet sample set, and a
    random encoder checkpoint of the shrunk ViT-S benchmarks."""
    root = tmp_path_factory.mktemp('bench')
    make_sample_data(str(root / 'data'), ['imagenet'])
    ckpt = str(root / 'encoder.pth')
    cfg = shrink(
        Config.fromfile(
            osp.join(BENCH, 'vit-small-p16-lastcls_knn-k20_in1k.py')),
        str(root / 'unused'))
    save_backbone_checkpoint(cfg, ckpt)
    return dict(root=str(root), ckpt=ckpt)


@pytest.mark.parametrize('name,metric', [
    ('vit-small-p16-lastcls_knn-k20_in1k', r'knn/top1: [\d.]+'),
    ('vit-small-p16-lastcls_logreg_in1k-1pct', r'logreg/top1: [\d.]+'),
], ids=['knn', 'logreg'])
def test_dist_test_benchmark_fits_in_memory(name, metric, imagenet_root,
                                            tmp_path):
    root = imagenet_root['root']
    config = str(tmp_path / f'{name}.py')
    shrink(Config.fromfile(osp.join(BENCH, f'{name}.py')),
           str(tmp_path / 'work')).dump(config)
    log, peak_mib = _launch('dist_test.sh',
                            [config, imagenet_root['ckpt'], '2'], cwd=root)
    assert 'using the gloo backend (rank 0 of 2)' in log
    assert re.search(r'Epoch\(test\) \[\d+/\d+\]\s+' + metric, log), \
        log[-3000:]
    print(f'dist_test.sh {name} peak RSS: {peak_mib:.0f} MiB')
    assert peak_mib <= TEST_PEAK_MIB, (
        f'a rank peaked at {peak_mib:.0f} MiB (bound {TEST_PEAK_MIB})')


class _Frozen(BaseModel):

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.linear.requires_grad_(False)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        return self.linear(inputs)


def test_a_frozen_model_is_left_out_of_ddp():
    """dist_test.sh wraps the benchmarks' frozen encoder; torch's DDP
    refuses a module without trainable parameters, so the wrapper keeps it
    unwrapped (no process group needed here) and runs it directly."""
    model = _Frozen()
    wrapper = DeviceAwareDistributedDataParallel(module=model,
                                                 device_ids=[0])
    assert is_model_wrapper(wrapper) and wrapper.module is model
    data = dict(inputs=torch.randn(4, 3))
    torch.testing.assert_close(wrapper.test_step(data), model.test_step(data))
    torch.testing.assert_close(wrapper.val_step(data), model.val_step(data))


def test_distributed_testing_uses_the_wrapper_that_takes_frozen_models():
    """PMSNRunner picks DeviceAwareDistributedDataParallel for any
    distributed launch (with CUDA too, where mmengine's default DDP wrapper
    would refuse the frozen benchmark encoder); a config's own wrapper and
    single-process runs are left alone."""
    cfg = Config(dict(model=dict(type='X'), launcher='none'))
    distributed_wrapper(cfg)
    assert cfg.get('model_wrapper_cfg') is None
    for launcher in ('pytorch', 'slurm'):
        cfg = Config(dict(model=dict(type='X'), launcher=launcher))
        distributed_wrapper(cfg)
        assert cfg.model_wrapper_cfg == dict(
            type='DeviceAwareDistributedDataParallel',
            broadcast_buffers=False, find_unused_parameters=False)
    own = dict(type='MMFullyShardedDataParallel')
    cfg = Config(dict(model=dict(type='X'), model_wrapper_cfg=own,
                      launcher='pytorch'))
    distributed_wrapper(cfg)
    assert cfg.model_wrapper_cfg == own
