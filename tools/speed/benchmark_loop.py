"""tools/train.py's real training loop beside the isolated step, same
config, dtype and batch: what the loop adds per iteration.

The loop is ``tools/train.py``'s ``main`` in this process (mmengine's
``Runner``: the config's loader, hooks, logger, ``NonFiniteGuardHook``) for
``--warmup`` + ``--iters`` iterations, without validation or checkpoints
(``CheckpointHook`` interval beyond the run, no ``save_last``). mmengine's
``IterTimerHook`` times every iteration (loading, the step and every hook)
and the part spent waiting for data; the iterations after the warm-up are
averaged. The isolated step
is ``step_profiler``'s (views, forward+loss, backward, clipping, optimiser,
EMA target, per-iteration hooks on a stand-in runner) on a synthetic decoded
batch, timed as ``side_by_side.measure`` times it.

Both run where ``tools/train.py`` runs (CUDA if available, else the CPU).
``--amp bf16``: the loop's optimiser wrapper becomes
``DeviceAwareAmpOptimWrapper`` with ``dtype='bfloat16'`` (its autocast
spans the views and forward+loss), the isolated step autocasts
forward+loss; ``--amp none`` runs both in the
config's ``OptimWrapper`` without autocast. The config's data is read under
``--data-root`` (the folder the configs' ``data/`` paths mean), else from
sample data written into a temporary folder (in-memory toy sets need none;
where an epoch-based loop needs more images than the sample train set has,
it is repeated).

Example::

    python tools/speed/benchmark_loop.py \\
        configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py \\
        --narrow --batch-size 4 --iters 5 --num-workers 0
"""
import argparse
import contextlib
import os
import os.path as osp
import sys
import tempfile
from typing import Any, Dict, List, NamedTuple, Optional, Sequence

import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS

import pmsn_mm  # noqa: F401  (registers the models, hooks)
from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.datasets.sample_data.layouts import FORMATS

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
from side_by_side import (build_ours, load_sibling, measure,  # noqa
                          narrow_config)

sys.path.pop(0)
AMP_TYPES = ('AmpOptimWrapper', 'DeviceAwareAmpOptimWrapper')


class LoopTimes(NamedTuple):
    """Seconds of the timed iterations, from mmengine's ``IterTimerHook``.

    Attributes:
        times: Each timed iteration's wall time (loading, step and hooks).
        data: The part of each spent waiting for the batch.
        calls: Iterations the loop ran, warm-up included.
    """
    times: List[float]
    data: List[float]
    calls: int


def loop_times(runner, warmup: int) -> LoopTimes:
    """The iterations after ``warmup`` as ``IterTimerHook`` recorded them
    in the runner's message hub (``train/time``, ``train/data_time``)."""
    hub = runner.message_hub
    times = [float(t) for t in hub.get_scalar('train/time').data[0]]
    data = [float(t) for t in hub.get_scalar('train/data_time').data[0]]
    return LoopTimes(times[warmup:], data[warmup:], len(times))


def loop_config(cfg: Config, batch: int, warmup: int, iters: int,
                amp: Optional[str], num_workers: Optional[int]) -> Config:
    """The config the loop runs (see the module docstring), a copy."""
    cfg = Config(cfg.to_dict())
    loader = cfg.train_dataloader
    loader.batch_size = batch
    if num_workers is not None:
        loader.num_workers = num_workers
        loader.persistent_workers = num_workers > 0 and loader.get(
            'persistent_workers', False)
    if cfg.train_cfg.get('type') == 'EpochBasedTrainLoop' or cfg.train_cfg.get(
            'by_epoch'):
        cfg.train_cfg.max_epochs = 1
        loader.num_batch_per_epoch = warmup + iters
    else:
        cfg.train_cfg.max_iters = warmup + iters
    wrapper = cfg.optim_wrapper
    if amp == 'bf16':
        wrapper.update(type='DeviceAwareAmpOptimWrapper', dtype='bfloat16')
    elif wrapper.get('type') in AMP_TYPES:
        wrapper.type = 'OptimWrapper'
        for key in ('dtype', 'loss_scale'):
            wrapper.pop(key, None)
    cfg.default_hooks.checkpoint.update(interval=10**9, save_last=False)
    cfg.default_hooks.timer = dict(type='IterTimerHook')
    return cfg


def _data_format(cfg: Config) -> Optional[str]:
    """The sample-data format the train set reads (None: in memory)."""
    root = cfg.train_dataloader.dataset.get('data_root') or ''
    parts = osp.normpath(root).split(os.sep)
    if len(parts) > 1 and parts[0] == 'data':
        if parts[1] not in FORMATS:
            raise ValueError(f'no sample data for data_root {root!r}; '
                             'pass --data-root')
        return parts[1]
    return None


def _repeat_short_sample_data(cfg: Config, own_data: bool) -> None:
    """An epoch-based loop reads ``num_batch_per_epoch`` batches of one
    epoch: the sample data's train set, where shorter, is repeated
    (mmengine's ``RepeatDataset``); the reader's own data is not.

    Args:
        cfg: The loop's config (in the folder its ``data/`` paths mean).
        own_data: The data is ``--data-root``'s.
    """
    loader = cfg.train_dataloader
    need = loader.num_batch_per_epoch * loader.batch_size
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    have = len(DATASETS.build(dict(loader.dataset, pipeline=[])))
    if have >= need:
        return
    if own_data:
        raise ValueError(
            f'the train set under --data-root has {have} images, fewer than '
            f'(--warmup + --iters) x batch = {need}: lower --iters or '
            '--batch-size')
    loader.dataset = dict(type='RepeatDataset', times=-(-need // have),
                          dataset=loader.dataset)


def run_loop(cfg: Config, tmp: str, data_root: Optional[str],
             **kwargs: Any) -> LoopTimes:
    """Run tools/train.py's loop in ``tmp``; its iteration times.

    Args:
        cfg: The (narrowed) config.
        tmp: A scratch folder (config, work dir, ``data`` link or samples).
        data_root: The folder holding the config's ``data/`` contents.
        kwargs: :func:`loop_config`'s settings.
    """
    fmt = _data_format(cfg)
    if data_root:
        os.symlink(osp.abspath(data_root), osp.join(tmp, 'data'))
    elif fmt:
        make_sample_data(osp.join(tmp, 'data'), formats=[fmt],
                         inat18_all_classes=False)
    loop_cfg = loop_config(cfg, **kwargs)
    path = osp.join(tmp, 'loop_config.py')
    train = load_sibling('../train')
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        if 'num_batch_per_epoch' in loop_cfg.train_dataloader:
            _repeat_short_sample_data(loop_cfg, bool(data_root))
        loop_cfg.dump(path)
        runner = train.main([path, '--work-dir', osp.join(tmp, 'work'),
                             '--no-validate'])
    finally:
        os.chdir(cwd)
    timed = loop_times(runner, kwargs['warmup'])
    if len(timed.times) < kwargs['iters']:
        raise RuntimeError(
            f'the loop ran {timed.calls} iterations, fewer than --warmup + '
            f'--iters = {kwargs["warmup"] + kwargs["iters"]}: the data holds '
            'too few batches (pass a larger --data-root or fewer --iters)')
    return timed


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='a training config')
    parser.add_argument('--iters', type=int, default=10,
                        help='timed iterations of the loop (and timed '
                        'isolated steps)')
    parser.add_argument('--warmup', type=int, default=2,
                        help='loop iterations before timing')
    parser.add_argument('--batch-size', type=int, default=None,
                        help="images per batch (default: the config's)")
    parser.add_argument('--amp', choices=['bf16', 'none'], default='none',
                        help='bfloat16 autocast on both sides')
    parser.add_argument('--narrow', action='store_true',
                        help='CPU sizes (side_by_side.NARROW; PMSN ViTs)')
    parser.add_argument('--num-workers', type=int, default=None,
                        help="loader workers of the loop (default: the "
                        "config's)")
    parser.add_argument('--data-root', default=None,
                        help="folder with the config's data/ contents "
                        '(default: sample data in a temporary folder)')
    parser.add_argument('--threads', type=int, default=None,
                        help='torch CPU threads (both sides)')
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Run the loop and the isolated step; print both.

    Returns:
        ``dict(rows=dict(loop=dict(ms, images_per_s, data_ms, iters),
        step=dict(ms, images_per_s, syncs)), overhead=loop ms / step ms,
        batch, device)``.
    """
    args = parse_args(argv)
    for name, value in (('--iters', args.iters), ('--warmup', args.warmup)):
        if value < 1:
            raise ValueError(f'{name} must be >= 1, got {value}')
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = Config.fromfile(osp.abspath(args.config))
    if args.narrow:
        narrow_config(cfg)
    batch = args.batch_size or cfg.train_dataloader.batch_size
    amp = None if args.amp == 'none' else args.amp
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    with tempfile.TemporaryDirectory() as tmp:
        timer = run_loop(cfg, tmp, args.data_root, batch=batch,
                         warmup=args.warmup, iters=args.iters, amp=amp,
                         num_workers=args.num_workers)
    loop_ms = sum(timer.times) / len(timer.times) * 1e3
    torch.manual_seed(0)
    with contextlib.redirect_stdout(sys.stderr):
        step = build_ours(cfg, batch, device, amp)
    step_row = measure(step, batch, device, args.iters)
    rows = dict(loop=dict(ms=loop_ms, images_per_s=batch / loop_ms * 1e3,
                          data_ms=sum(timer.data) / len(timer.data) * 1e3,
                          iters=timer.calls),
                step=dict(ms=step_row['ms'],
                          images_per_s=step_row['images_per_s'],
                          syncs=step_row['syncs']))
    overhead = loop_ms / step_row['ms']
    print('\n'.join([
        f'{args.config}{" (narrowed)" if args.narrow else ""}',
        f'  device {device}, batch {batch}, amp {args.amp}, loop: '
        f'{timer.calls} iterations ({args.warmup} warm-up), step: '
        f'{args.iters} timed',
        f'  {"":26s} {"ms/iter":>9s} {"img/s":>9s}',
        f'  {"loop (tools/train.py)":26s} {loop_ms:9.2f} '
        f'{rows["loop"]["images_per_s"]:9.1f}  (waiting for data: '
        f'{rows["loop"]["data_ms"]:.2f} ms/iter)',
        f'  {"isolated step":26s} {step_row["ms"]:9.2f} '
        f'{step_row["images_per_s"]:9.1f}',
        f'  loop overhead: {overhead:.2f}x the isolated step '
        f'({loop_ms - step_row["ms"]:+.2f} ms/iter)']))
    return dict(rows=rows, overhead=overhead, batch=batch, device=str(device))


if __name__ == '__main__':
    main()
