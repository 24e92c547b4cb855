"""Time a PMSN training step (forward + backward + optimiser step).

Builds the model and optimiser of a config, feeds random multi-view batches
with the config's view sizes, and prints the median step time over several
steps, images/s (images = batch size, each with all its views) and peak
memory (CUDA allocator peak on GPU; peak RSS growth on CPU).

Example:
    python tools/benchmarks/benchmark_pmsn_step.py \
        configs/pmsn/pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py \
        --batch-size 64 --steps 10
"""
import argparse
import resource
import statistics
import time
from typing import List, Optional

import torch
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.optim import build_optim_wrapper
from mmengine.registry import init_default_scope

import pmsn_mm  # noqa: F401
from mmpretrain.registry import MODELS


def view_sizes(cfg: Config) -> List[int]:
    """Crop size of every view of the config's MultiView transform."""
    for t in cfg.train_dataloader.dataset.pipeline:
        if t['type'] == 'MultiView':
            sizes = []
            for n, pipe in zip(t['num_views'], t['transforms']):
                crop = [p for p in pipe if p['type'] == 'RandomResizedCrop']
                sizes += [int(crop[0]['scale'])] * n
            return sizes
    raise ValueError('the config has no MultiView transform in '
                     'train_dataloader.dataset.pipeline')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='a PMSN config')
    parser.add_argument('--batch-size', type=int, default=None,
                        help='per-device batch (default: the config\'s)')
    parser.add_argument('--steps', type=int, default=10, help='timed steps')
    parser.add_argument('--warmup', type=int, default=2, help='untimed steps')
    parser.add_argument('--device', default='cuda' if torch.cuda.is_available()
                        else 'cpu')
    parser.add_argument('--threads', type=int, default=None,
                        help='torch CPU threads (default: torch\'s choice)')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = Config.fromfile(args.config)
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    batch = args.batch_size or cfg.train_dataloader.batch_size
    sizes = view_sizes(cfg)
    device = torch.device(args.device)
    model = MODELS.build(cfg.model).to(device).train()
    optim = build_optim_wrapper(model, cfg.optim_wrapper)
    views = [torch.randn(batch, 3, s, s, device=device) for s in sizes]
    # the EMA target's momentum schedule reads the run length (as in a Runner)
    MessageHub.get_current_instance().update_info('max_iters',
                                                  args.warmup + args.steps)

    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if device.type == 'cuda':
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for step in range(args.warmup + args.steps):
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        losses = model.loss(views, data_samples=[])
        loss = sum(v for k, v in losses.items() if 'loss' in k)
        optim.update_params(loss)
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    if device.type == 'cuda':
        peak = torch.cuda.max_memory_allocated(device) / 2**20
        peak_name = 'peak CUDA memory'
    else:
        peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss -
                rss0) / 1024
        peak_name = 'peak RSS growth'
    result = dict(
        device=str(device), batch=batch, views=len(sizes),
        median_step_s=median, images_per_s=batch / median,
        peak_mib=peak, threads=torch.get_num_threads())
    print(f'{args.config}\n  device {device}, batch {batch}, views '
          f'{sizes}, threads {result["threads"]}\n  median step '
          f'{median * 1000:.1f} ms over {args.steps} steps (min '
          f'{min(times) * 1000:.1f}, max {max(times) * 1000:.1f}) -> '
          f'{batch / median:.1f} images/s\n  {peak_name}: {peak:.1f} MiB')
    return result


if __name__ == '__main__':
    main()
