"""The main job on a shared CPU: seconds per iteration with and without
``CPUThreadsHook``, on a quiet machine and beside busy neighbours, in one
run.

Each condition trains the config with ``tools/train.py`` in a fresh process
for ``--iters`` iterations (no validation; mmengine's ``IterTimerHook``
times every iteration, read back from the run's ``scalars.json``) and
reports the median of the last ``--last``. Conditions, in an interleaved
order (each repeat runs them forwards, then backwards):

- ``before``: ``default_hooks.cpu_threads.threads=None`` (torch's default:
  one thread per core), ``after``: the config's ``CPUThreadsHook``;
- neighbours: ``none`` (quiet), ``busy`` (one single-threaded process
  spinning in Python), ``torch`` (a process multiplying matrices with one
  torch thread per core).

The ratios are against ``before`` on the quiet machine. Example (the
numbers of docs/get_started.md)::

    python tools/speed/benchmark_shared_cpu.py --iters 60 --last 30
"""
import argparse
import glob
import json
import os
import os.path as osp
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
MAIN_JOB = osp.join(
    REPO, 'configs', 'pmsn',
    'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
NEIGHBOURS = {
    'none': None,
    'busy': 'while True: pass',
    'torch': ('import torch\n'
              'a = torch.randn(384, 384)\n'
              'while True: a @ a'),
}
SETTINGS = ('before', 'after')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('config', nargs='?', default=MAIN_JOB,
                        help='an iteration-based config (default: the main '
                        'job)')
    parser.add_argument('--iters', type=int, default=60,
                        help='iterations per run')
    parser.add_argument('--last', type=int, default=30,
                        help='the median is taken over the last N')
    parser.add_argument('--neighbours', default='none,busy',
                        help=f'comma-separated, of {", ".join(NEIGHBOURS)}')
    parser.add_argument('--repeats', type=int, default=1,
                        help='forward + backward passes over the conditions')
    args = parser.parse_args(argv)
    args.neighbours = args.neighbours.split(',')
    unknown = set(args.neighbours) - set(NEIGHBOURS)
    if unknown:
        parser.error(f'--neighbours: unknown {sorted(unknown)}; choose from '
                     f'{", ".join(NEIGHBOURS)}')
    if not 0 < args.last <= args.iters:
        parser.error('--last must be in [1, --iters]')
    return args


def iteration_times(work_dir: str) -> List[float]:
    """Seconds of each logged iteration (``IterTimerHook``'s ``time``)."""
    times = []
    for path in glob.glob(osp.join(work_dir, '*', 'vis_data',
                                   'scalars.json')):
        with open(path) as f:
            for line in f:
                record = json.loads(line)
                if 'time' in record and 'loss' in record:
                    times.append(record['time'])
    return times


def run_once(config: str, setting: str, neighbour: Optional[str],
             iters: int, work_dir: str) -> Tuple[List[float], str]:
    """One training run; its iteration times and the CPU-threads log lines.
    """
    options = [f'train_cfg.max_iters={iters}',
               f'train_cfg.val_interval={iters + 1}',
               'default_hooks.logger.interval=1',
               'log_processor.window_size=1',
               'default_hooks.checkpoint.save_last=False',
               f'default_hooks.checkpoint.interval={iters + 1}']
    if setting == 'before':
        options.append('default_hooks.cpu_threads.threads=None')
    env = {k: v for k, v in os.environ.items()
           if k not in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS')}
    spinner = None
    if neighbour is not None:
        spinner = subprocess.Popen([sys.executable, '-c', neighbour],
                                   env=env)
        time.sleep(1.0)
    try:
        out = subprocess.run(
            [sys.executable, osp.join(REPO, 'tools', 'train.py'), config,
             '--work-dir', work_dir, '--no-validate', '--cfg-options',
             *options],
            env=env, capture_output=True, text=True, cwd=REPO)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if out.returncode:
        raise RuntimeError(f'{setting}/{neighbour}: tools/train.py failed:\n'
                           f'{out.stderr[-3000:]}')
    notes = [line.split(' - ', 2)[-1] for line in out.stdout.splitlines()
             if 'CPU threads:' in line]
    return iteration_times(work_dir), '; '.join(notes)


def main(argv=None) -> Dict[Tuple[str, str], float]:
    args = parse_args(argv)
    conditions = [(s, n) for n in args.neighbours for s in SETTINGS]
    order = []
    for _ in range(args.repeats):
        order += conditions + conditions[::-1]
    medians: Dict[Tuple[str, str], List[float]] = {}
    notes: Dict[Tuple[str, str], str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (setting, neighbour) in enumerate(order):
            times, note = run_once(args.config, setting,
                                   NEIGHBOURS[neighbour], args.iters,
                                   osp.join(tmp, f'run{i}'))
            if len(times) < args.last:
                raise RuntimeError(f'{setting}/{neighbour}: {len(times)} '
                                   'iterations logged')
            medians.setdefault((setting, neighbour), []).append(
                statistics.median(times[-args.last:]))
            notes[(setting, neighbour)] = note
            changes = note.count('->')
            print(f'  {setting:6s} {neighbour:6s} '
                  f'{medians[(setting, neighbour)][-1]:.3f} s/iter' +
                  (f' ({changes} thread change(s))' if changes else ''),
                  flush=True)
    result = {k: statistics.median(v) for k, v in medians.items()}
    quiet = result.get(('before', 'none'))
    print(f'\n{osp.relpath(args.config, REPO)}: median s/iteration of the '
          f'last {args.last} of {args.iters} (median over {2 * args.repeats}'
          f' runs each), {os.cpu_count()} CPUs')
    print(f'{"threads":8s} {"neighbour":10s} {"s/iter":>7s} '
          f'{"x quiet before":>15s}')
    rows = sorted(result.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    for (setting, neighbour), value in rows:
        ratio = f'{value / quiet:.2f}' if quiet else '-'
        print(f'{setting:8s} {neighbour:10s} {value:7.3f} {ratio:>15s}')
    print('\nCPU threads lines of the "after" runs:')
    for (setting, neighbour), note in notes.items():
        if setting == 'after':
            print(f'  {neighbour}: {note or "-"}')
    return result


if __name__ == '__main__':
    main()
