"""Time a PMSN training step, and with ``--floor`` its floor, side by side.

Builds the model and optimiser of a config and feeds random multi-view
batches with the config's views (a ``MultiView`` pipeline, or a
``BatchAugmentPreprocessor``); views go straight to ``model.loss`` (data
loading and augmentation are not timed).

- **step**: ``model.loss`` (target forward, anchor forwards, head and
  loss) + backward + optimiser update (``OptimWrapper.update_params``) +
  the EMA target update (``model.update_target``), i.e. what a training
  iteration runs after the data pre-processor;
- **floor** (``--floor``): the online encoder's (backbone + neck) forward
  and backward on the same anchor views with the same patch-drop, plus the
  target encoder's no-grad forward on the target view.

The two are timed alternately in one process, in ABBA order (so that load
on the machine hits both alike), and the medians over ``--steps`` rounds,
after ``--warmup`` untimed rounds, are printed with the overhead
``step / floor - 1`` (of wall-time and of process CPU-time medians),
images/s (images = batch size, each with all its views) and peak memory
(CUDA allocator peak on GPU; peak RSS growth on CPU). On a CPU shared with
other jobs, ``--threads 1`` gives stable numbers: with more threads the
OpenMP threads wait for each other whenever one is descheduled.

Examples::

    # toy setting: ViT-Tiny/4, 32 px, 2 views, batch 64
    C=configs/pmsn/pmsn_vit-tiny-p4_8xb128-300e_cifar10-mnist-overlay
    python tools/benchmarks/benchmark_pmsn_step.py $C-power-law.py \\
        --batch-size 64 --floor --threads 1
    # paper setting: ViT-S/16, 224 px + 10 focal 96 px views, batch 8
    python tools/benchmarks/benchmark_pmsn_step.py \\
        configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py \\
        --batch-size 8 --floor --threads 1
"""
import argparse
import resource
import statistics
import time
from typing import Callable, List, Optional, Tuple

import torch
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.optim import build_optim_wrapper
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS
from torch import Tensor, nn

import pmsn_mm  # noqa: F401


def view_shapes(cfg: Config) -> List[Tuple[int, int]]:
    """``(channels, size)`` of every view the config's model receives, in
    order: a ``MultiView`` pipeline's crops, or the view groups of a
    ``BatchAugmentPreprocessor`` (the model's or the config's top-level
    ``data_preprocessor``)."""
    backbone = cfg.model.backbone
    channels = backbone.get('in_channels', 3)
    pre = cfg.model.get('data_preprocessor') or cfg.get(
        'data_preprocessor') or {}
    if pre.get('type') == 'BatchAugmentPreprocessor':
        groups = pre.get('views') or [
            dict(num_views=pre.get('num_views', 2), size=pre.get('size'))]
        return [(channels, int(g.get('size') or backbone.img_size))
                for g in groups for _ in range(g.get('num_views', 1))]
    for t in cfg.train_dataloader.dataset.pipeline:
        if t['type'] == 'MultiView':
            shapes = []
            for n, pipe in zip(t['num_views'], t['transforms']):
                crop = [p for p in pipe if p['type'] == 'RandomResizedCrop']
                shapes += [(channels, int(crop[0]['scale']))] * n
            return shapes
    raise ValueError('the config has neither a MultiView transform in '
                     'train_dataloader.dataset.pipeline nor a '
                     'BatchAugmentPreprocessor')


def _encode(model: nn.Module, views: List[Tensor], mask_ratio: float):
    x = torch.cat(views)
    feats = model.backbone(x, mask_ratio=mask_ratio) \
        if mask_ratio > 0 else model.backbone(x)
    return model.neck(feats)[0]


def floor_step(model: nn.Module, views: List[Tensor]) -> None:
    """Online backbone + neck forward and backward on the anchor views (the
    random ones patch-dropped as in PMSN), target no-grad forward on the
    target view; gradients are left in ``.grad`` (cleared untimed)."""
    num_random = model.num_random_views
    with torch.no_grad():
        model.target_net(views[0])
    anchors = [_encode(model, views[1:1 + num_random], model.mask_ratio)]
    if len(views) > 1 + num_random:
        anchors.append(_encode(model, views[1 + num_random:], 0.0))
    torch.cat(anchors).sum().backward()


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='a PMSN config')
    parser.add_argument('--batch-size', type=int, default=None,
                        help='per-device batch (default: the config\'s)')
    parser.add_argument('--steps', type=int, default=10,
                        help='timed rounds')
    parser.add_argument('--warmup', type=int, default=2,
                        help='untimed rounds')
    parser.add_argument('--floor', action='store_true',
                        help='also time the floor and print the overhead')
    parser.add_argument('--device', default='cuda' if torch.cuda.is_available()
                        else 'cpu')
    parser.add_argument('--threads', type=int, default=None,
                        help='torch CPU threads (default: torch\'s choice)')
    return parser.parse_args(argv)


def _timed(fn: Callable[[], None],
           device: torch.device) -> Tuple[float, float]:
    """Wall seconds and CPU seconds of this process (all threads)."""
    if device.type == 'cuda':
        torch.cuda.synchronize(device)
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    if device.type == 'cuda':
        torch.cuda.synchronize(device)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = Config.fromfile(args.config)
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    batch = args.batch_size or cfg.train_dataloader.batch_size
    shapes = view_shapes(cfg)
    device = torch.device(args.device)
    model = MODELS.build(cfg.model).to(device).train()
    optim = build_optim_wrapper(model, cfg.optim_wrapper)
    views = [torch.randn(batch, c, s, s, device=device) for c, s in shapes]
    rounds = args.warmup + args.steps
    # the EMA target's momentum schedule reads the run length (as in a Runner)
    MessageHub.get_current_instance().update_info('max_iters', rounds)

    def step() -> None:
        losses = model.loss(views, data_samples=[])
        optim.update_params(sum(v for k, v in losses.items() if 'loss' in k))
        model.update_target()  # TargetEMAHook's work in a Runner

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if device.type == 'cuda':
        torch.cuda.reset_peak_memory_stats(device)

    def floor() -> None:
        floor_step(model, views)

    times = {'step': [], 'floor': []}
    cpu_times = {'step': [], 'floor': []}
    for i in range(rounds):
        # ABBA order (step, floor / floor, step) cancels slow drifts of the
        # machine's load between the two
        order = ('step', 'floor') if i % 2 == 0 else ('floor', 'step')
        for name in order:
            if name == 'floor' and not args.floor:
                continue
            wall, cpu = _timed(step if name == 'step' else floor, device)
            model.zero_grad(set_to_none=True)  # the floor's gradients
            if i >= args.warmup:
                times[name].append(wall)
                cpu_times[name].append(cpu)
    if device.type == 'cuda':
        peak = torch.cuda.max_memory_allocated(device) / 2**20
        peak_name = 'peak CUDA memory'
    else:
        peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss -
                rss0) / 1024
        peak_name = 'peak RSS growth'
    median = statistics.median(times['step'])
    result = dict(
        device=str(device), batch=batch, views=len(shapes),
        median_step_s=median, images_per_s=batch / median,
        peak_mib=peak, threads=torch.get_num_threads())
    sizes = [s for _, s in shapes]
    lines = [
        f'{args.config}', f'  device {device}, batch {batch}, views '
        f'{sizes}, threads {result["threads"]}, {args.steps} timed rounds',
        f'  step : median {median * 1000:.1f} ms (min '
        f'{min(times["step"]) * 1000:.1f}, max '
        f'{max(times["step"]) * 1000:.1f}) -> {batch / median:.1f} images/s'
    ]
    if args.floor:
        floor = statistics.median(times['floor'])
        cpu_step = statistics.median(cpu_times['step'])
        cpu_floor = statistics.median(cpu_times['floor'])
        result.update(
            median_floor_s=floor,
            overhead=median / floor - 1,
            median_step_cpu_s=cpu_step,
            median_floor_cpu_s=cpu_floor,
            overhead_cpu=cpu_step / cpu_floor - 1)
        lines += [
            f'  floor: median {floor * 1000:.1f} ms (min '
            f'{min(times["floor"]) * 1000:.1f}, max '
            f'{max(times["floor"]) * 1000:.1f}) = online encoder forward + '
            'backward, target forward',
            f'  overhead of the step over its floor: '
            f'{result["overhead"] * 100:+.1f} % (wall-time medians), '
            f'{result["overhead_cpu"] * 100:+.1f} % (process CPU-time '
            f'medians: step {cpu_step * 1000:.1f} ms, floor '
            f'{cpu_floor * 1000:.1f} ms)'
        ]
    lines.append(f'  {peak_name}: {peak:.1f} MiB')
    print('\n'.join(lines))
    return result


if __name__ == '__main__':
    main()
