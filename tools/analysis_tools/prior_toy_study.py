"""Paper §5.1 / Fig. 3 study: which feature does each cluster prior keep?

Trains the toy config once per (prior, KL direction, seed), ``K =
--runs-per-device`` runs at a time on one device (K > 1: each run its own
process of this tool), after printing a time estimate from a few timed
training steps of the config at its batch on that device. Each run reports,
for the toy set's labels (power-law digit, uniform background): weighted kNN
top-1 on backbone CLS and projector features, NMI of the argmax prototype,
usage and p̄ against the prior (``assignment_stats``), a collapse indicator,
the same for the untrained encoder, and curves over training
(:class:`~pmsn_mm.engine.hooks.PrototypeAssignmentHook` on a fixed subset
of the kNN memory). Priors: ``power-law`` / ``adaptive`` use the config's
prior (``adaptive`` builds an ``AdaptivePowerLawPrior`` if the config has
another one), ``uniform`` replaces it; PSwAV configs (no EMA target: the
"target" curves repeat the online encoder) take ``--kl-directions forward``.

The runs' configs, final numbers, table and estimate are those of
``prior_study.py`` beside it; this tool schedules the runs and draws.
Writes ``<work-dir>/results.json``, ``table.md`` (mean ± std over seeds),
``curves_<run>.png`` and ``fig3_<run>.png`` (test images and their nearest
training images on backbone features, green when the digit matches).

Examples:
    C=configs/pmsn
    python tools/analysis_tools/prior_toy_study.py \\
        $C/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py \\
        --seeds 0 1 2 --work-dir work_dirs/prior_toy_study
    # paper scale, 3 runs sharing the first GPU; --estimate-only: the estimate
    python tools/analysis_tools/prior_toy_study.py \\
        $C/pmsn_vit-tiny-p4_1xb1024-300e_shapes-digits-power-law.py \\
        --runs-per-device 3 --work-dir work_dirs/prior_toy_study_gpu
"""
import argparse
import json
import math
import os
import os.path as osp
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence


def _device_arg(argv: Sequence[str]) -> str:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument('--device', default='auto')
    return parser.parse_known_args(list(argv))[0].device


if __name__ == '__main__' and _device_arg(sys.argv[1:]) == 'cpu':
    # hide the GPUs before torch and mmengine look (mmengine keeps the
    # device it finds at import)
    os.environ['CUDA_VISIBLE_DEVICES'] = ''

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from prior_study import (KL_DIRECTIONS, LABELS, PRIORS,  # noqa: E402
                         estimate_seconds, evaluate_run, run_dir, run_name,
                         scale_schedule, study_config, summarise)

#: ``--quick``: iterations, images per toy set, Fig. 3 references, batch.
QUICK_ITERS, QUICK_SAMPLES, QUICK_REFS, QUICK_BATCH = 2, 128, 2, 32
#: Untimed iterations before the timed ones of the estimate.
ESTIMATE_WARMUP = 2


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description='Power-law vs uniform prior on the toy set (paper Fig. 3)')
    p.add_argument('config', help='PMSN/PSwAV toy config')
    p.add_argument('--priors', nargs='+', default=['power-law', 'uniform'],
                   choices=sorted(PRIORS))
    p.add_argument('--kl-directions', nargs='+', default=['forward'],
                   choices=KL_DIRECTIONS, help="PMSNLoss kl_direction(s): "
                   "'forward' = KL(p̄‖prior) (paper), "
                   "'reverse' = KL(prior‖p̄)")
    p.add_argument('--seeds', nargs='+', type=int, default=[0, 1, 2])
    p.add_argument('--work-dir', default='work_dirs/prior_toy_study')
    p.add_argument('--device', default='auto', help="'cpu', 'cuda', "
                   "'cuda:N' or 'auto' (cuda:0 when there is a GPU)")
    p.add_argument('--runs-per-device', type=int, default=1, metavar='K',
                   help='runs training at the same time on the device '
                   '(K > 1: one process each)')
    p.add_argument('--estimate-iters', type=int, default=5, help='timed '
                   f'iterations (after {ESTIMATE_WARMUP} untimed) of the '
                   'estimate; 0: no estimate')
    p.add_argument('--estimate-only', action='store_true',
                   help='print the estimate and stop')
    p.add_argument('--amp', action='store_true', help='bfloat16 autocast '
                   "without loss scaling (DeviceAwareAmpOptimWrapper, "
                   "dtype='bfloat16')")
    p.add_argument('--max-iters', type=int, default=None,
                   help='override the schedule length (schedules scale)')
    p.add_argument('--eval-interval', type=int, default=None,
                   help='iterations between curve points (default: 10/run)')
    p.add_argument('--curve-samples', type=int, default=2000,
                   help='memory images used for the curves')
    p.add_argument('--k', type=int, default=20, help='kNN neighbours')
    p.add_argument('--num-refs', type=int, default=8)
    p.add_argument('--num-neighbors', type=int, default=8)
    p.add_argument('--cfg-options', nargs='+', default=None,
                   metavar='KEY=VALUE', help='override config settings')
    p.add_argument('--data-options', nargs='+', default=None,
                   metavar='KEY=VALUE', help='toy-set settings for the '
                   'training set and the kNN sets alike, e.g. digit_size=12')
    p.add_argument('--quick', action='store_true', help='a quick check that '
                   'the study runs (numbers meaningless): the first seed, '
                   f'{QUICK_ITERS} iterations, batch <= {QUICK_BATCH}, '
                   f'{QUICK_SAMPLES} images per toy set, 1 timed iteration')
    p.add_argument('--only', nargs=3, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.runs_per_device < 1 or args.estimate_iters < 0:
        p.error('--runs-per-device must be >= 1 and --estimate-iters >= 0')
    if args.quick:
        apply_quick(args)
    return args


def apply_quick(args: argparse.Namespace) -> None:
    """Turn parsed arguments into the ``--quick`` check, in place (explicit
    ``--max-iters`` / ``--data-options num_samples=N`` win)."""
    args.seeds = args.seeds[:1]
    args.max_iters = QUICK_ITERS if args.max_iters is None else args.max_iters
    options = list(args.data_options or [])
    if not any(o.startswith('num_samples=') for o in options):
        options.insert(0, f'num_samples={QUICK_SAMPLES}')
    args.data_options = options
    args.curve_samples = min(args.curve_samples, QUICK_SAMPLES)
    args.num_refs = min(args.num_refs, QUICK_REFS)
    args.num_neighbors = min(args.num_neighbors, 3)
    args.estimate_iters = min(args.estimate_iters, 1)


def _options(options: Optional[Sequence[str]]) -> dict:
    """``KEY=VALUE`` strings as mmengine's ``DictAction`` reads them."""
    if not options:
        return {}
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser()
    parser.add_argument('--o', nargs='+', action=DictAction)
    return parser.parse_args(['--o', *options]).o


def make_config(args: argparse.Namespace, prior: str, direction: str,
                seed: int):
    """The config of one run (prior, KL direction, seed, study settings)."""
    return study_config(
        args.config, prior, direction, seed, args.work_dir,
        cfg_options=_options(args.cfg_options),
        data_options=_options(args.data_options), max_iters=args.max_iters,
        max_batch_size=QUICK_BATCH if args.quick else None, amp=args.amp)


# ------------------------------------------------------------- one run
def run_one(args: argparse.Namespace, prior: str, direction: str,
            seed: int) -> None:
    """Train and evaluate one run; writes ``metrics.json`` (with the curve),
    ``untrained.json`` (the first prior and direction) and its Fig. 3."""
    from config_datasets import build_dataset
    from mmengine.runner import Runner

    from pmsn_mm.engine.hooks.prototype_assignment_hook import (
        PrototypeAssignmentHook, brightness_deciles, labelled_inputs)
    cfg = make_config(args, prior, direction, seed)
    datasets = [build_dataset(cfg.knn_train_dataset),
                build_dataset(cfg.knn_test_dataset)]
    runner = Runner.from_cfg(cfg)
    model = runner.model
    memory, queries = [labelled_inputs(model, ds, LABELS) for ds in datasets]
    memory[1]['brightness'] = brightness_deciles(memory[0])
    hook = PrototypeAssignmentHook(
        datasets[0], LABELS, min(args.curve_samples, len(datasets[0])),
        args.eval_interval or max(1, cfg.train_cfg.max_iters // 10),
        brightness=True)
    runner.register_hook(hook)
    os.makedirs(cfg.work_dir, exist_ok=True)
    if (direction, prior) == (args.kl_directions[0], args.priors[0]):
        untrained = evaluate_run(model, memory, queries, args.k)[0]
        untrained.pop('prior_tau', None)  # no prior trained yet
        _dump(dict(untrained, seed=seed), cfg.work_dir, 'untrained.json')
    start = time.time()
    runner.train()
    metrics, mem_b, qry_b = evaluate_run(model, memory, queries, args.k)
    metrics.update(seed=seed, prior=prior, kl_direction=direction,
                   train_seconds=time.time() - start, curve=hook.points)
    _dump(metrics, cfg.work_dir, 'metrics.json')
    if seed == args.seeds[0]:
        name = run_name(prior, direction)
        save_fig3(*datasets, mem_b, qry_b,
                  osp.join(args.work_dir, f'fig3_{name}.png'),
                  f'{name} prior, seed {seed}: nearest neighbours', args)


def _dump(obj, folder: str, name: str) -> None:
    with open(osp.join(folder, name), 'w') as f:
        json.dump(obj, f, indent=1)


def _load(folder: str, name: str):
    with open(osp.join(folder, name)) as f:
        return json.load(f)


# ------------------------------------------------------------ estimate
def measure_step_seconds(args: argparse.Namespace) -> float:
    """Median seconds per training iteration (mmengine's IterTimerHook,
    data included) of the first run's config on this device, over
    ``--estimate-iters`` iterations after ``ESTIMATE_WARMUP``."""
    from mmengine.runner import Runner
    cfg = make_config(args, args.priors[0], args.kl_directions[0],
                      args.seeds[0])
    scale_schedule(cfg, ESTIMATE_WARMUP + args.estimate_iters)
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None
    cfg.default_hooks.checkpoint = None
    cfg.work_dir = osp.join(args.work_dir, 'estimate')
    cfg.experiment_name += '_estimate'
    runner = Runner.from_cfg(cfg)
    runner.train()
    times = runner.message_hub.get_scalar('train/time').data[0]
    return float(np.median(times[ESTIMATE_WARMUP:]))  # runner freed here


# ----------------------------------------------------------- reporting
def save_fig3(mem_ds, qry_ds, mem_feats, qry_feats, out_file: str,
              title: str, args: argparse.Namespace) -> str:
    """One test image per digit (most frequent first) and its nearest
    training images on backbone features."""
    import torch.nn.functional as F
    from config_datasets import dataset_labels, load_image
    from neighbor_grid import save_neighbor_grid
    q, m = dataset_labels(qry_ds), dataset_labels(mem_ds)
    refs = [int(np.flatnonzero(q['digit'] == d)[0]) for d in range(10)
            if (q['digit'] == d).any()][:args.num_refs]
    sim = F.normalize(qry_feats[refs], dim=1) @ F.normalize(mem_feats,
                                                            dim=1).T
    nbrs = sim.topk(args.num_neighbors, dim=1).indices.numpy()
    bg = mem_ds.background_classes

    def caption(y: dict, j: int) -> str:
        return f'digit {y["digit"][j]}\n{bg[y["background"][j]]}'

    rows = [[load_image(qry_ds, i)] + [load_image(mem_ds, j) for j in nbrs[r]]
            for r, i in enumerate(refs)]
    captions = [[caption(q, i)] + [caption(m, j) for j in nbrs[r]]
                for r, i in enumerate(refs)]
    same = [[m['digit'][j] == q['digit'][i] for j in nbrs[r]]
            for r, i in enumerate(refs)]
    return save_neighbor_grid(rows, captions, same, out_file, title, 'digit',
                              reference='query', cell_inches=1.0)


# ---------------------------------------------------------------- main
def run_all(args, argv: List[str], runs: list, device: str) -> None:
    """All runs, ``--runs-per-device`` at a time (K > 1: subprocesses of
    this tool with ``--only``, logs in each run's ``study.log``)."""
    progress = tqdm(total=len(runs), desc='toy study', unit='run')
    if args.runs_per_device == 1:
        for prior, direction, seed in runs:
            progress.set_postfix_str(f'{run_name(prior, direction)} {seed}')
            run_one(args, prior, direction, seed)
            progress.update()
        return progress.close()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))] +
        [p for p in [os.environ.get('PYTHONPATH')] if p]))
    if device == 'cpu':  # share the cores
        env['OMP_NUM_THREADS'] = str(
            max(1, (os.cpu_count() or 1) // args.runs_per_device))
    pending, running = list(runs), []
    while pending or running:
        while pending and len(running) < args.runs_per_device:
            prior, direction, seed = pending.pop(0)
            folder = run_dir(args.work_dir, prior, direction, seed)
            os.makedirs(folder, exist_ok=True)
            log = open(osp.join(folder, 'study.log'), 'w')
            cmd = [sys.executable, osp.abspath(__file__), *argv, '--device',
                   device, '--only', prior, direction, str(seed)]
            running.append((subprocess.Popen(cmd, stdout=log, stderr=log,
                                             env=env), log))
            print(f'[toy study] started {run_name(prior, direction)} seed '
                  f'{seed}: log {log.name}', flush=True)
        time.sleep(0.2)
        for proc, log in [r for r in running if r[0].poll() is not None]:
            running.remove((proc, log))
            log.close()
            progress.update()
            if proc.returncode:
                for other, _ in running:
                    other.terminate()
                with open(log.name) as f:
                    tail = f.read()[-3000:]
                raise RuntimeError(f'{log.name} (exit {proc.returncode}):\n'
                                   f'{tail}')
    progress.close()


def main(argv: Optional[List[str]] = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.device == 'cpu':  # and for the runs' processes
        os.environ['CUDA_VISIBLE_DEVICES'] = ''
    import torch
    from assignment_curves import plot_assignment_curves
    from mmengine.registry import init_default_scope
    if args.device in ('auto', 'cuda'):
        args.device = 'cuda:0' if torch.cuda.is_available() or \
            args.device == 'cuda' else 'cpu'
    if args.device.startswith('cuda'):
        if not torch.cuda.is_available():
            sys.exit(f'--device {args.device}: no CUDA device is available.')
        torch.cuda.set_device(torch.device(args.device))
    elif args.device != 'cpu':
        sys.exit(f"--device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got "
                 f'{args.device!r}.')
    init_default_scope('mmpretrain')
    if args.only:
        return run_one(args, args.only[0], args.only[1], int(args.only[2]))
    os.makedirs(args.work_dir, exist_ok=True)
    runs = [(p, d, s) for d in args.kl_directions for p in args.priors
            for s in args.seeds]
    summary = dict(config=args.config, seeds=args.seeds, runs={})
    if args.estimate_iters:
        step, k = measure_step_seconds(args), args.runs_per_device
        iters = make_config(args, *runs[0]).train_cfg.max_iters
        total = estimate_seconds(step, iters, len(runs), k)
        summary['estimate'] = dict(step_seconds=step, iters=iters,
                                   runs=len(runs), runs_per_device=k,
                                   seconds=total)
        shared = (f', if the {k} runs sharing the device do not slow each '
                  f'other (one at a time: {step * iters * len(runs) / 60:.1f}'
                  ' min)' if k > 1 else '')
        print(f'[toy study] estimate on {args.device}: {step * 1e3:.1f} ms '
              f'per step x {iters} iterations x {math.ceil(len(runs) / k)} '
              f'waves ({len(runs)} runs, {k} at a time) = {total:.1f} s = '
              f'{total / 60:.1f} min of training{shared}', flush=True)
    if args.estimate_only:
        return summary
    start = time.time()
    run_all(args, argv, runs, args.device)
    results: Dict[str, List[dict]] = {}
    for prior, direction, seed in runs:
        folder = run_dir(args.work_dir, prior, direction, seed)
        name = run_name(prior, direction)
        if (prior, direction) == (args.priors[0], args.kl_directions[0]):
            results.setdefault('untrained encoder', []).append(
                _load(folder, 'untrained.json'))
        results.setdefault(name, []).append(_load(folder, 'metrics.json'))
        if seed == args.seeds[-1]:
            plot_assignment_curves(
                {r['seed']: r['curve'] for r in results[name]},
                osp.join(args.work_dir, f'curves_{name}.png'),
                f'{name} prior ({len(args.seeds)} seeds)')
    summary.update(runs=results, table=summarise(results),
                   wall_seconds=time.time() - start)
    _dump(summary, args.work_dir, 'results.json')
    with open(osp.join(args.work_dir, 'table.md'), 'w') as f:
        f.write(summary['table'] + '\n')
    print(summary['table'])
    print(f'[toy study] {len(runs)} runs took '
          f'{summary["wall_seconds"] / 60:.1f} min (training, evaluation)')
    return summary


if __name__ == '__main__':
    main()
