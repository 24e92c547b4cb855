"""SIGTERM/SIGUSR1 at a random iteration, then the same command again: the
final checkpoint is tensor for tensor the uninterrupted run's (PreemptionHook,
preempted.json, tools/dist_train.sh's signal forwarding, Slurm's requeue).

The signal is sent when the log shows iteration ``k`` (drawn anew in every
run; it is in each assertion's message): the assertions hold for any ``k``.
The tiny PMSN config draws random numbers everywhere a real run does and
runs with deterministic kernels, ``num_workers=0``; a test hook sleeps after
each iteration so that the run is still training when the signal comes.
"""
import os
import os.path as osp
import random
import re
import signal
import stat
import subprocess
import sys
import time
from typing import Dict, List, Optional

import pytest
import torch

from tests._configs import REPO, TINY_PMSN, write_config
from tests._dist import free_port
from tests._preemption_hooks import SAVING

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

TRAIN = osp.join(REPO, 'tools', 'train.py')
DIST_TRAIN = osp.join(REPO, 'tools', 'dist_train.sh')
SLURM_TRAIN = osp.join(REPO, 'tools', 'slurm_train.sh')
MAX_ITERS = 12
INTERVAL = 2  # PreemptionHook's agreement interval with several ranks
EXIT_PREEMPTED = 75
# per-rank batch 4 (global 8); different random streams per rank
TWO_RANKS = ['--cfg-options', 'train_dataloader.batch_size=4',
             'randomness.diff_rank_seed=True']

_CHECKPOINT = "type='CheckpointHook', interval=2, by_epoch=False)"
assert _CHECKPOINT in TINY_PMSN
ITER_CONFIG = TINY_PMSN.replace('T_max=6', f'T_max={MAX_ITERS}').replace(
    'max_iters=6', f'max_iters={MAX_ITERS}').replace(
        _CHECKPOINT, f"""type='CheckpointHook', interval=5, by_epoch=False),
    preemption=dict(type='PreemptionHook', interval={INTERVAL})""") + """
custom_imports = dict(imports=['pmsn_mm', 'tests._preemption_hooks'],
                      allow_failed_imports=False)
custom_hooks = [dict(type='SlowIterHook', seconds=0.15),
                dict(type='SlowSaveHook', seconds=1.5)]
"""
# one epoch of 12 iterations, checkpoints every epoch
EPOCH_CONFIG = ITER_CONFIG.replace(
    'interval=5, by_epoch=False', 'interval=1, by_epoch=True').replace(
        'log_processor = dict(by_epoch=False)',
        'log_processor = dict(by_epoch=True)') + """
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=1)
"""
assert 'by_epoch=True' in EPOCH_CONFIG


def _env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS='1')
    env.update(extra)
    return env


class _Run:
    """A training command in the background, its output in a file."""

    def __init__(self, cmd: List[str], tmp_path, name: str,
                 env: Dict[str, str]) -> None:
        self.log = str(tmp_path / f'{name}.log')
        with open(self.log, 'w') as out:
            self.proc = subprocess.Popen(cmd, cwd=str(tmp_path), env=env,
                                         stdout=out, stderr=subprocess.STDOUT)

    def text(self) -> str:
        with open(self.log, errors='replace') as f:
            return f.read()

    def wait_for(self, pattern: str, timeout: float = 240) -> None:
        end = time.monotonic() + timeout
        while not re.search(pattern, self.text()):
            assert self.proc.poll() is None, (pattern, self.text()[-4000:])
            assert time.monotonic() < end, (pattern, self.text()[-4000:])
            time.sleep(0.05)

    def finish(self, timeout: float = 300) -> int:
        return self.proc.wait(timeout=timeout)


def _iter_logged(k: int, total: int = MAX_ITERS) -> str:
    return rf'Iter\(train\) \[\s*{k}/{total}\]'


def _train_cmd(config: str, work_dir: str) -> List[str]:
    return [sys.executable, TRAIN, config, '--work-dir', work_dir]


def _run(cmd: List[str], tmp_path, name: str, env=None) -> str:
    run = _Run(cmd, tmp_path, name, env or _env())
    assert run.finish() == 0, run.text()[-4000:]
    return run.text()


def _assert_same(final_a: str, final_b: str, note: str) -> None:
    a = torch.load(final_a, weights_only=False)
    b = torch.load(final_b, weights_only=False)
    assert a['meta']['iter'] == b['meta']['iter'], note
    assert a['meta']['epoch'] == b['meta']['epoch'], note
    assert a['state_dict'].keys() == b['state_dict'].keys()
    assert 'head.prototypes' in a['state_dict']
    for key, value in a['state_dict'].items():
        assert torch.equal(value, b['state_dict'][key]), (key, note)
    for pid, state in a['optimizer']['state'].items():
        for name, value in state.items():
            assert torch.equal(value, b['optimizer']['state'][pid][name]), \
                (pid, name, note)


def _preempted(log: str, work_dir: str, k: int, ranks: int) -> int:
    """The iteration the run stopped after; checks the marker and file."""
    match = re.search(r'PreemptionHook: (SIG\w+) received; every rank '
                      r'stopped after iteration (\d+), saved (\S+) ', log)
    assert match, log[-4000:]
    stop = int(match.group(2))
    slack = 1 if ranks == 1 else 2 * INTERVAL
    assert k <= stop <= k + slack, (k, stop)
    assert log.count('PreemptionHook: SIG') == 1  # one save, once
    assert osp.isfile(osp.join(work_dir, 'preempted.json'))
    ckpt = torch.load(match.group(3), weights_only=False)  # loadable
    assert ckpt['meta']['iter'] == stop
    assert len(ckpt['rng_states']) == ranks
    return stop


def _resumed(log: str, work_dir: str, stop: int) -> None:
    assert re.search(r'Resuming the run stopped by SIG\w+ at iteration '
                     f'{stop} from ', log), log[-4000:]
    assert f'saved at iteration {stop}.' in log  # RNGStateHook
    assert not osp.exists(osp.join(work_dir, 'preempted.json'))


@pytest.fixture(scope='module')
def configs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('configs')
    return dict(iter=write_config(tmp, ITER_CONFIG, 'tiny_iter.py'),
                epoch=write_config(tmp, EPOCH_CONFIG, 'tiny_epoch.py'))


@pytest.fixture(scope='module')
def one_rank(configs, tmp_path_factory):
    """The uninterrupted single-process run's final checkpoint."""
    tmp = tmp_path_factory.mktemp('full1')
    _run(_train_cmd(configs['iter'], str(tmp / 'w')), tmp, 'full')
    return str(tmp / 'w' / f'iter_{MAX_ITERS}.pth')


@pytest.fixture(scope='module')
def two_ranks(configs, tmp_path_factory):
    """The uninterrupted 2-rank run's final checkpoint."""
    tmp = tmp_path_factory.mktemp('full2')
    _run(['bash', DIST_TRAIN, configs['iter'], '2', '--work-dir',
          str(tmp / 'w'), *TWO_RANKS], tmp, 'full',
         _env(PORT=str(free_port())))
    return str(tmp / 'w' / f'iter_{MAX_ITERS}.pth')


def test_one_process_sigusr1_then_sigterm_during_the_save(
        tmp_path, configs, one_rank):
    k = random.randint(1, 8)
    work_dir = str(tmp_path / 'w')
    cmd = _train_cmd(configs['iter'], work_dir)
    run = _Run(cmd, tmp_path, 'preempted', _env())
    run.wait_for(_iter_logged(k))
    run.proc.send_signal(signal.SIGUSR1)
    run.wait_for(SAVING)  # the preemption's save has begun: signal again
    run.proc.send_signal(signal.SIGTERM)
    assert run.finish() == EXIT_PREEMPTED, (k, run.text()[-4000:])
    log = run.text()
    assert '(1 further signal(s) ignored)' in log
    stop = _preempted(log, work_dir, k, ranks=1)

    log = _run(cmd, tmp_path, 'resumed')  # the same command
    _resumed(log, work_dir, stop)
    _assert_same(one_rank, osp.join(work_dir, f'iter_{MAX_ITERS}.pth'),
                 f'k={k}')


def test_one_process_epoch_based_preempted_mid_epoch(tmp_path, configs):
    full = str(tmp_path / 'full')
    _run(_train_cmd(configs['epoch'], full), tmp_path, 'full')
    k = random.randint(1, 10)
    work_dir = str(tmp_path / 'w')
    cmd = _train_cmd(configs['epoch'], work_dir)
    run = _Run(cmd, tmp_path, 'preempted', _env())
    run.wait_for(rf'Epoch\(train\)\s*\[1\]\[\s*{k}/{MAX_ITERS}\]')
    run.proc.send_signal(signal.SIGTERM)
    assert run.finish() == EXIT_PREEMPTED, (k, run.text()[-4000:])
    stop = _preempted(run.text(), work_dir, k, ranks=1)

    log = _run(cmd, tmp_path, 'resumed')
    _resumed(log, work_dir, stop)
    assert 'skipping them' in log
    _assert_same(osp.join(full, 'epoch_1.pth'),
                 osp.join(work_dir, 'epoch_1.pth'), f'k={k}')


def test_two_ranks_signal_to_dist_train(tmp_path, configs, two_ranks):
    k = random.randint(1, 6)
    sig = random.choice([signal.SIGTERM, signal.SIGUSR1])
    work_dir = str(tmp_path / 'w')
    cmd = ['bash', DIST_TRAIN, configs['iter'], '2', '--work-dir', work_dir,
           *TWO_RANKS]
    run = _Run(cmd, tmp_path, 'preempted', _env(PORT=str(free_port())))
    run.wait_for(_iter_logged(k))
    run.proc.send_signal(sig)  # what Slurm's --signal=B:... does
    status = run.finish()
    assert status == EXIT_PREEMPTED, (k, sig, run.text()[-4000:])
    stop = _preempted(run.text(), work_dir, k, ranks=2)

    log = _run(cmd, tmp_path, 'resumed', _env(PORT=str(free_port())))
    _resumed(log, work_dir, stop)
    _assert_same(two_ranks, osp.join(work_dir, f'iter_{MAX_ITERS}.pth'),
                 f'k={k} {sig.name}')


def _two_nodes(cmd: List[str], tmp_path, name: str) -> List[_Run]:
    port = str(free_port())
    return [
        _Run(cmd, tmp_path, f'{name}{node}',
             _env(NNODES='2', NODE_RANK=str(node), MASTER_ADDR='127.0.0.1',
                  PORT=port)) for node in (0, 1)
    ]


def test_two_nodes_signal_to_one_node(tmp_path, configs, two_ranks):
    k = random.randint(1, 6)
    work_dir = str(tmp_path / 'w')
    cmd = ['bash', DIST_TRAIN, configs['iter'], '1', '--work-dir', work_dir,
           *TWO_RANKS]
    runs = _two_nodes(cmd, tmp_path, 'preempted')
    runs[0].wait_for(_iter_logged(k))
    # only node 1 is told: the ranks agree, both stop after one iteration
    runs[1].proc.send_signal(signal.SIGUSR1)
    statuses = [run.finish() for run in runs]
    assert statuses == [EXIT_PREEMPTED] * 2, (k, runs[0].text()[-4000:])
    stop = _preempted(runs[0].text(), work_dir, k, ranks=2)

    runs = _two_nodes(cmd, tmp_path, 'resumed')
    assert [run.finish() for run in runs] == [0, 0], runs[0].text()[-4000:]
    _resumed(runs[0].text(), work_dir, stop)
    _assert_same(two_ranks, osp.join(work_dir, f'iter_{MAX_ITERS}.pth'),
                 f'k={k}')


# Stand-ins for Slurm's commands: srun starts --ntasks tasks with the
# variables Slurm sets, records their pids, forwards signals and exits with
# the highest status; scontrol resolves host lists and records requeues.
SRUN = """#!{python}
import os, signal, subprocess, sys
args, i, ntasks = sys.argv[1:], 0, 1
while args[i].startswith('-'):
    if args[i].startswith('--ntasks='):
        ntasks = int(args[i].split('=')[1])
    i += 2 if args[i] in ('-p', '-n', '-N') else 1
procs = [
    subprocess.Popen(args[i:], env=dict(
        os.environ, SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank),
        SLURM_NTASKS=str(ntasks), SLURM_NODELIST='node[1]', SLURM_NNODES='1',
        SLURM_NODEID='0', SLURM_STEP_ID='0',
        SLURM_JOB_ID=os.environ.get('SLURM_JOB_ID', '4242')))
    for rank in range(ntasks)]
with open(os.environ['SRUN_PIDS'], 'w') as f:
    f.write(' '.join(str(p.pid) for p in procs))
for sig in (signal.SIGTERM, signal.SIGUSR1):
    signal.signal(sig, lambda s, _: [p.send_signal(s) for p in procs])
sys.exit(max(p.wait() for p in procs))
"""
SCONTROL = """#!{python}
import os, sys
if sys.argv[1:3] == ['show', 'hostname']:
    print('127.0.0.1')
else:
    with open(os.environ['SCONTROL_LOG'], 'a') as f:
        f.write(' '.join(sys.argv[1:]) + '\\n')
"""


def _slurm_bin(tmp_path) -> str:
    folder = tmp_path / 'bin'
    folder.mkdir()
    for name, text in (('srun', SRUN), ('scontrol', SCONTROL)):
        path = folder / name
        path.write_text(text.format(python=sys.executable))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def _slurm_env(tmp_path, bin_dir: str,
               restart: Optional[int] = None) -> Dict[str, str]:
    env = _env(PATH=bin_dir + os.pathsep + os.environ['PATH'],
               SLURM_JOB_ID='4242', GPUS='2', GPUS_PER_NODE='2',
               MASTER_PORT=str(free_port()),
               SRUN_PIDS=str(tmp_path / 'pids'),
               SCONTROL_LOG=str(tmp_path / 'scontrol.log'))
    if restart is not None:
        env['SLURM_RESTART_COUNT'] = str(restart)
    return env


def test_slurm_requeues_itself_and_resumes(tmp_path, configs, two_ranks):
    k = random.randint(1, 6)
    bin_dir = _slurm_bin(tmp_path)
    work_dir = str(tmp_path / 'w')
    cmd = ['bash', SLURM_TRAIN, 'partition', 'job', configs['iter'],
           work_dir, *TWO_RANKS]
    run = _Run(cmd, tmp_path, 'preempted', _slurm_env(tmp_path, bin_dir))
    run.wait_for(_iter_logged(k))
    # --signal=USR1@... (no B:) reaches the tasks; here rank 1 only
    with open(tmp_path / 'pids') as f:
        pids = [int(pid) for pid in f.read().split()]
    os.kill(pids[1], signal.SIGUSR1)
    assert run.finish() == EXIT_PREEMPTED, (k, run.text()[-4000:])
    stop = _preempted(run.text(), work_dir, k, ranks=2)
    with open(tmp_path / 'scontrol.log') as f:
        assert f.read() == 'requeue 4242\n'  # rank 0, once

    # Slurm starts the batch script again: the same command
    run = _Run(cmd, tmp_path, 'resumed',
               _slurm_env(tmp_path, bin_dir, restart=1))
    assert run.finish() == 0, run.text()[-4000:]
    _resumed(run.text(), work_dir, stop)
    _assert_same(two_ranks, osp.join(work_dir, f'iter_{MAX_ITERS}.pth'),
                 f'k={k}')
