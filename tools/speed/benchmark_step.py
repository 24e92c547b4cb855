"""Per-phase cost of one training step of any config: aten ops, host syncs,
wall time, peak memory.

Builds the config's model (with its ``data_preprocessor``) and optimiser on
``--device`` and a batch of synthetic decoded images as the config's loader
would hand it over: the config's ``train_pipeline`` without its file-loading
transform, run on generated uint8 images of mixed sizes, collated with the
config's ``collate_fn`` (``padded_collate``: one padded uint8 tensor). Then
one training step, phase by phase, as mmengine's ``train_step`` and the
per-iteration hooks run it:

- **views**: the data pre-processor (upload, view drawing, normalisation);
- **forward+loss**: ``model.loss`` + ``model.parse_losses`` (under
  ``torch.autocast(device, bfloat16)`` with ``--amp bf16``);
- **backward**: ``OptimWrapper.backward``;
- **grad clip**: mmengine's gradient clipping where the config sets
  ``optim_wrapper.clip_grad`` (mmengine reads the norm for its log: one
  host sync that is mmengine's);
- **optimizer**: the optimiser's step + ``zero_grad`` (with the optimizer
  step pre-hooks of the per-iteration hooks, e.g. ``NonFiniteGuardHook``);
- **target update**: ``model.update_target()`` (what ``TargetEMAHook``
  calls; ``n/a`` for models without an EMA target);
- **hooks**: ``before_train_iter`` + ``after_train_iter`` of the config's
  pmsn_mm per-iteration hooks (``NonFiniteGuardHook``,
  ``PrototypeUsageHook``, ``PriorWeightWarmupHook``) on a stand-in runner
  (``TargetEMAHook``'s work is the target update above).

The step is ``tests/_profiling/step_profiler.py``'s (what the tests count).
For each phase it prints the aten op count and the host syncs (one counting
pass under ``tests/_profiling/op_counter.py``'s ``OpCounter``; on a GPU each
op is at least one kernel launch, each sync drains the launch queue), the
blocking host-to-device copies (``h2d``, the same pass under
``tests/_profiling/host_copies.py``'s ``HostCopyCounter``; the batch's own
``non_blocking`` upload is counted apart as ``batch``), the median wall
time over ``--repeats`` uncounted steps (after one warm-up step), the
peak memory (``torch.cuda.max_memory_allocated`` on CUDA, the growth of the
peak RSS on CPU), images/s of the whole step and the share of the step
spent drawing views. ``AmpOptimWrapper`` (and pmsn_mm's
``DeviceAwareAmpOptimWrapper``) is replaced by a plain ``OptimWrapper``:
``--amp bf16`` autocasts forward+loss itself and needs no loss scaler.

With ``--floor`` (PMSN and MSN models: an EMA ``target_net``, patch-dropped
random anchor views) it then times the **step** after the data
pre-processor (forward+loss, backward, grad clip, optimizer, target update:
what a training iteration runs between the views and the hooks) against
its **floor** on the same views: the online encoder's (backbone + neck)
forward and backward on the anchor views with the same patch-drop, plus the
target encoder's no-grad forward on the target view. The two run
alternately in ABBA order (so that load on the machine hits both alike),
``--repeats`` rounds after one untimed round, and it prints the medians and
the overhead ``step / floor - 1`` of wall-time and of process CPU-time
medians. On a CPU shared with other jobs, ``--threads 1`` gives stable
numbers: with more threads the OpenMP threads wait for each other whenever
one is descheduled.

Examples::

    python tools/speed/benchmark_step.py \\
        configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py \\
        --device cuda --amp bf16 --batch-size 64 --repeats 10
    python tools/speed/benchmark_step.py \\
        configs/pmsn/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py\\
        --device cpu --batch-size 8
    # a PMSN step against its floor (the bare encoder passes)
    python tools/speed/benchmark_step.py \\
        configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py \\
        --batch-size 8 --floor --threads 1
"""
import argparse
import os.path as osp
import resource
import statistics
import sys
import time
import types
from typing import Any, Dict, List, Optional, Sequence

import torch
from mmengine.config import Config

# A maintainer script, run from a checkout: the step profiler is test code
# (tests/_profiling/), imported with the repository root on sys.path.
REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)
from tests._profiling.step_profiler import (AFTER_VIEWS, build_step,  # noqa
                                            count_phases, make_batch,
                                            pin_batch, step_phases, sync,
                                            time_phases)


def _encode(model: torch.nn.Module, views: List[torch.Tensor],
            mask_ratio: float) -> torch.Tensor:
    x = torch.cat(views)
    feats = model.backbone(x, mask_ratio=mask_ratio) \
        if mask_ratio > 0 else model.backbone(x)
    return model.neck(feats)[0]


def floor_step(model: torch.nn.Module, views: List[torch.Tensor]) -> None:
    """The floor of a PMSN/MSN step: the bare encoder passes.

    The online backbone + neck forward and backward on the anchor views (the
    random ones patch-dropped as the model does), the target's no-grad
    forward on the target view; gradients are left in ``.grad``.

    Args:
        model: A PMSN or MSN model (``target_net``, ``num_random_views``,
            ``mask_ratio``).
        views: The views ``model.loss`` receives, target first: tensors of
            shape (B, C, H, W).
    """
    num_random = model.num_random_views
    with torch.no_grad():
        model.target_net(views[0])
    anchors = [_encode(model, views[1:1 + num_random], model.mask_ratio)]
    if len(views) > 1 + num_random:
        anchors.append(_encode(model, views[1 + num_random:], 0.0))
    torch.cat(anchors).sum().backward()


#: The phases of a step that ``--floor`` times against the floor.
FLOOR_PHASES = AFTER_VIEWS


def time_step_and_floor(env: types.SimpleNamespace, data: dict,
                        repeats: int) -> Dict[str, float]:
    """Median wall and CPU seconds of the step and of its floor.

    The views are drawn once (for each); the step (:data:`FLOOR_PHASES`) and
    :func:`floor_step` then run in ABBA order, ``repeats`` rounds after one
    untimed round, the device synchronised around each; gradients are
    cleared untimed after each.

    Args:
        env: :func:`build_step`'s namespace (a PMSN or MSN model).
        data: A collated batch.
        repeats: Timed rounds (>= 1).

    Returns:
        ``median_step_s``, ``median_floor_s``, ``overhead`` and their CPU-time
        counterparts ``median_step_cpu_s``, ``median_floor_cpu_s``,
        ``overhead_cpu``.
    """
    model = env.model
    missing = [a for a in ('target_net', 'num_random_views', 'mask_ratio')
               if not hasattr(model, a)]
    if missing:
        raise ValueError(
            f'--floor needs a PMSN or MSN model (target_net, '
            f'num_random_views, mask_ratio), but {type(model).__name__} has '
            f'no {missing}.')
    phases = step_phases(env, data)
    phases['views']()  # the step's views, drawn once
    # the floor's: one more draw of the same shapes
    inputs = model.data_preprocessor(data, True)['inputs']

    def step() -> None:
        for name in FLOOR_PHASES:
            if name in phases:
                phases[name]()

    def floor() -> None:
        with env.autocast():
            floor_step(model, inputs)

    wall: Dict[str, List[float]] = {'step': [], 'floor': []}
    cpu: Dict[str, List[float]] = {'step': [], 'floor': []}
    for i in range(repeats + 1):
        # ABBA order cancels slow drifts of the machine's load
        order = ('step', 'floor') if i % 2 == 0 else ('floor', 'step')
        for name in order:
            sync(env.device)
            start, start_cpu = time.perf_counter(), time.process_time()
            (step if name == 'step' else floor)()
            sync(env.device)
            if i:
                wall[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
            model.zero_grad(set_to_none=True)  # the floor's gradients
    out = {}
    for kind, times in (('', wall), ('_cpu', cpu)):
        step_s = statistics.median(times['step'])
        floor_s = statistics.median(times['floor'])
        out.update({f'median_step{kind}_s': step_s,
                    f'median_floor{kind}_s': floor_s,
                    f'overhead{kind}': step_s / floor_s - 1})
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='a training config')
    parser.add_argument('--device', default='cpu',
                        help='cpu or cuda (default: cpu)')
    parser.add_argument('--amp', choices=['bf16'], default=None,
                        help='bfloat16 autocast of forward+loss')
    parser.add_argument('--compile', action='store_true',
                        help='torch.compile the backbone')
    parser.add_argument('--batch-size', type=int, default=None,
                        help="images per batch (default: the config's)")
    parser.add_argument('--repeats', type=int, default=5,
                        help='timed steps (median)')
    parser.add_argument('--threads', type=int, default=None,
                        help='torch CPU threads')
    parser.add_argument('--floor', action='store_true',
                        help='also time the step (after the views) against '
                        'its floor, the bare encoder passes (PMSN, MSN)')
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Run the benchmark and print its table.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` if None).

    Returns:
        ``dict(counts=..., seconds=..., peak=..., images_per_s=...,
        views_share=...)``, with ``--floor`` also ``floor``
        (:func:`time_step_and_floor`'s medians and overheads).
    """
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = Config.fromfile(args.config)
    batch = args.batch_size or cfg.train_dataloader.batch_size
    device = torch.device(args.device)
    env = build_step(cfg, device, args.amp, args.compile)
    try:
        counts = count_phases(cfg, batch, device, args.amp, env=env)
    except Exception as exc:
        if not args.compile:
            raise
        print(f'--compile: the compiled step failed on {device} '
              f'({type(exc).__name__}: {str(exc)[:300]}); running eagerly.')
        args.compile = False
        env = build_step(cfg, device, args.amp, False)
        counts = count_phases(cfg, batch, device, args.amp, env=env)
    data = make_batch(cfg, batch)
    if device.type == 'cuda' and cfg.train_dataloader.get('pin_memory'):
        data = pin_batch(data)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if device.type == 'cuda':
        torch.cuda.reset_peak_memory_stats(device)
    seconds = time_phases(env, data, args.repeats)
    if device.type == 'cuda':
        peak = f'{torch.cuda.max_memory_allocated(device) / 2**20:.0f} MiB'
    else:
        growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss -
                  rss0) / 1024
        peak = f'{growth:.0f} MiB peak RSS growth'
    total = sum(seconds.values())
    result = dict(counts=counts, seconds=seconds, peak=peak,
                  images_per_s=batch / total,
                  views_share=seconds['views'] / total)
    lines = [
        f'{args.config}',
        f'  device {device}, batch {batch}, amp {args.amp or "off"}, '
        f'compile {args.compile}, {args.repeats} timed steps',
        f'  {"phase":16s} {"ops":>7s} {"syncs":>6s} {"h2d":>5s} '
        f'{"batch":>5s} {"ms":>9s}  sync ops; blocking copies',
    ]
    for name in counts:
        c = counts[name]
        lines.append(
            f'  {name:16s} {c["ops"]:7d} {c["syncs"]:6d} {c["h2d"]:5d} '
            f'{c["h2d_batch"]:5d} {seconds[name] * 1e3:9.2f}  '
            + (', '.join(f'{k} x{v}' for k, v in c['sync_ops'].items())
               or '-') + '; '
            + (', '.join(f'{k} x{v}' for k, v in c['h2d_sites'].items())
               or '-'))
    ops = sum(c['ops'] for c in counts.values())
    syncs = sum(c['syncs'] for c in counts.values())
    h2d = sum(c['h2d'] for c in counts.values())
    uploads = sum(c['h2d_batch'] for c in counts.values())
    lines += [
        f'  {"step":16s} {ops:7d} {syncs:6d} {h2d:5d} {uploads:5d} '
        f'{total * 1e3:9.2f}',
        f'  {result["images_per_s"]:.1f} images/s; drawing the views: '
        f'{result["views_share"] * 100:.1f} % of the step; peak memory '
        f'{peak}'
    ]
    if args.floor:
        floor = time_step_and_floor(env, data, args.repeats)
        result['floor'] = floor
        lines += [
            f'  step after the views: median '
            f'{floor["median_step_s"] * 1e3:.1f} ms; floor: median '
            f'{floor["median_floor_s"] * 1e3:.1f} ms = online encoder '
            'forward + backward, target forward',
            f'  overhead of the step over its floor: '
            f'{floor["overhead"] * 100:+.1f} % (wall-time medians), '
            f'{floor["overhead_cpu"] * 100:+.1f} % (process CPU-time '
            f'medians: step {floor["median_step_cpu_s"] * 1e3:.1f} ms, floor '
            f'{floor["median_floor_cpu_s"] * 1e3:.1f} ms)'
        ]
    print('\n'.join(lines))
    return result


if __name__ == '__main__':
    main()
