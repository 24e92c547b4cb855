"""Launch ``tools/dist_train.sh`` with 2 CPU processes many times and count
the exit codes (a finished run must exit 0 every time).

Example::

    python .dev_scripts/count_dist_exit_codes.py --runs 20

Each launch trains the SimCLR toy config for 2 iterations (gloo) in a fresh
work dir and checks that its final checkpoint was written. Prints one line
per launch and the counts; exits 1 if any launch failed.
"""
import argparse
import collections
import os
import os.path as osp
import socket
import subprocess
import sys
import tempfile
import time

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
CONFIG = osp.join(ROOT, 'configs', 'simclr',
                  'simclr_resnet18_2xb16-toy_power-law-overlay.py')
OPTIONS = ['train_cfg.max_iters=2', 'train_dataloader.batch_size=4',
           'train_dataloader.dataset.num_samples=64',
           'default_hooks.checkpoint.interval=2']


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def launch(work_dir: str, config: str) -> int:
    env = dict(os.environ, PORT=str(free_port()), OMP_NUM_THREADS='1')
    cmd = ['bash', osp.join(ROOT, 'tools', 'dist_train.sh'), config, '2',
           '--work-dir', work_dir, '--cfg-options', *OPTIONS]
    with open(osp.join(work_dir + '.log'), 'w') as log:
        return subprocess.run(cmd, env=env, stdout=log,
                              stderr=subprocess.STDOUT).returncode


def main(argv=None) -> collections.Counter:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--config', default=CONFIG)
    parser.add_argument('--keep', help='folder for the work dirs and logs')
    args = parser.parse_args(argv)
    root = args.keep or tempfile.mkdtemp(prefix='dist_exit_codes_')
    os.makedirs(root, exist_ok=True)
    counts: collections.Counter = collections.Counter()
    for i in range(args.runs):
        work_dir = osp.join(root, f'run{i:03d}')
        start = time.time()
        code = launch(work_dir, args.config)
        saved = osp.isfile(osp.join(work_dir, 'iter_2.pth'))
        counts[(code, saved)] += 1
        print(f'launch {i + 1}/{args.runs}: exit {code}, checkpoint '
              f"{'written' if saved else 'MISSING'}, "
              f'{time.time() - start:.1f} s', flush=True)
    ok = counts[(0, True)]
    print(f'{ok}/{args.runs} launches exited 0 with their checkpoint; '
          f'all outcomes (exit code, checkpoint written): {dict(counts)}; '
          f'logs in {root}')
    return counts


if __name__ == '__main__':
    result = main()
    sys.exit(0 if set(result) == {(0, True)} else 1)
