"""Loader cost per image, and the device time to draw a batch's views.

On the same generated JPEGs (ImageNet-like: long side 333-640 px, ~90 KB),
in one process on one CPU core, medians over ``--repeats`` passes:

- **decode**: PIL ``Image.open(...).convert('RGB')`` (the floor any loader
  pays) and OpenCV's ``imdecode`` (what both pmsn_mm loaders use);
- **per-sample pipeline**: the ``train_pipeline`` of
  ``configs/_base_/datasets/imagenet_msn_per-sample.py`` (load + MSN's 12
  views with mmpretrain's transforms + pack), what the workers run when the
  views are drawn per sample;
- **batched-path loader**: ``LoadImageForViews`` + ``PackInputs`` per image
  and ``padded_collate`` per batch (amortised), what the workers run for
  ``BatchAugmentPreprocessor`` (``configs/_base_/datasets/imagenet_msn.py``).

Then, on ``--device``: the time ``BatchAugmentPreprocessor`` (MSN's views)
takes to draw all views of a batch of ``--batch-size`` decoded images, and
with ``--step CONFIG`` the training step of that config after its views
(forward+loss to target update, ``tests/_profiling/step_profiler.py``) at the
same batch size, and the ratio of the two.

Example::

    python tools/speed/benchmark_pipeline.py --images 40 --repeats 5
    python tools/speed/benchmark_pipeline.py --batch-size 8 \\
        --step configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py
"""
import argparse
import io
import os
import os.path as osp
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional

import cv2
import numpy as np
import torch
from mmengine.config import Config
from mmengine.dataset import Compose
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS
from PIL import Image

import pmsn_mm  # noqa: F401  (registers the transforms and the collate)
from pmsn_mm.datasets.padded_collate import padded_collate
from pmsn_mm.datasets.sample_data import class_image, write_image

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
# A maintainer script, run from a checkout: the step profiler is test code
# (tests/_profiling/), imported with the repository root on sys.path.
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
from tests._profiling.step_profiler import (AFTER_VIEWS, build_step,  # noqa
                                            make_batch, time_phases)

PER_SAMPLE = osp.join(ROOT, 'configs', '_base_', 'datasets',
                      'imagenet_msn_per-sample.py')
BATCHED = osp.join(ROOT, 'configs', '_base_', 'datasets', 'imagenet_msn.py')


def make_jpegs(folder: str, num: int, seed: int = 0) -> List[str]:
    """``num`` class-coded JPEGs, long side 333-640 px, quality 96 (about
    90 KB, as ImageNet's)."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(num):
        long_side = int(rng.integers(333, 641))
        short = int(long_side * rng.uniform(0.66, 0.8))
        h, w = (short, long_side) if i % 4 else (long_side, short)
        path = osp.join(folder, f'{i:04d}.JPEG')
        write_image(path, class_image(i % 10, 10, h, w, rng), quality=96)
        paths.append(path)
    return paths


def per_image_ms(fn: Callable[[str], object], paths: List[str],
                 repeats: int) -> float:
    """Median over passes of the mean milliseconds per image."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for path in paths:
            fn(path)
        times.append((time.perf_counter() - start) / len(paths) * 1e3)
    return statistics.median(times)


def _pil_decode(path: str) -> np.ndarray:
    with open(path, 'rb') as f:
        return np.asarray(Image.open(io.BytesIO(f.read())).convert('RGB'))


def _cv2_decode(path: str) -> np.ndarray:
    with open(path, 'rb') as f:
        data = np.frombuffer(f.read(), np.uint8)
    return cv2.imdecode(data, cv2.IMREAD_COLOR)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--images', type=int, default=40)
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--batch-size', type=int, default=64,
                        help='images per batch for the device timing')
    parser.add_argument('--device', default='cuda' if torch.cuda.is_available()
                        else 'cpu')
    parser.add_argument('--step', help='a PMSN config: also time its '
                        'training step at --batch-size on --device')
    parser.add_argument('--work-dir', help='where the JPEGs go (a temporary '
                        'folder by default)')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> Dict[str, float]:
    args = parse_args(argv)
    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    init_default_scope('mmpretrain')
    folder = args.work_dir or tempfile.mkdtemp(prefix='pipeline_bench_')
    os.makedirs(folder, exist_ok=True)
    paths = make_jpegs(folder, args.images)
    kb = statistics.mean(osp.getsize(p) for p in paths) / 1024
    per_sample = Compose(Config.fromfile(PER_SAMPLE).train_pipeline)
    batched_cfg = Config.fromfile(BATCHED)
    batched = Compose(batched_cfg.train_pipeline)
    np.random.seed(0)

    def loader(path: str) -> dict:
        return batched(dict(img_path=path))

    def batched_loader(batch: List[str]) -> dict:
        return padded_collate([loader(p) for p in batch])

    result = dict(
        decode_pil_ms=per_image_ms(_pil_decode, paths, args.repeats),
        decode_cv2_ms=per_image_ms(_cv2_decode, paths, args.repeats),
        per_sample_ms=per_image_ms(
            lambda p: per_sample(dict(img_path=p)), paths, args.repeats))
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for i in range(0, len(paths), 8):
            batched_loader(paths[i:i + 8])
        times.append((time.perf_counter() - start) / len(paths) * 1e3)
    result['batched_loader_ms'] = statistics.median(times)
    floor = result['decode_pil_ms']
    lines = [
        f'{len(paths)} JPEGs, mean {kb:.0f} KB, long side 333-640 px; one '
        'core; ms per image (x PIL decode, images/s/core), median of '
        f'{args.repeats} passes:'
    ]
    for key, name in (('decode_pil_ms', 'decode to RGB (PIL), the floor'),
                      ('decode_cv2_ms', 'decode (OpenCV)'),
                      ('per_sample_ms', 'per-sample pipeline (12 views)'),
                      ('batched_loader_ms',
                       'batched-path loader (decode + pack + collate)')):
        ms = result[key]
        lines.append(f'  {name:46s} {ms:7.2f} ms  x{ms / floor:5.2f}  '
                     f'{1000 / ms:6.0f}/s')

    device = torch.device(args.device)
    pre = MODELS.build(batched_cfg.data_preprocessor).to(device)
    batch_paths = [paths[i % len(paths)] for i in range(args.batch_size)]
    data = batched_loader(batch_paths)
    with torch.no_grad():
        pre(data, True)  # warm-up (and kornia's import)
        draws = []
        for _ in range(args.repeats):
            if device.type == 'cuda':
                torch.cuda.synchronize(device)
            start = time.perf_counter()
            pre(data, True)
            if device.type == 'cuda':
                torch.cuda.synchronize(device)
            draws.append(time.perf_counter() - start)
    result['draw_views_ms'] = statistics.median(draws) * 1e3
    name = (torch.cuda.get_device_name(device) if device.type == 'cuda'
            else f'CPU, {torch.get_num_threads()} thread')
    lines.append(
        f'device {device} ({name}): drawing the {pre.num_views} views of a '
        f'batch of {args.batch_size} (upload included): '
        f'{result["draw_views_ms"]:.1f} ms (median of {args.repeats})')
    if args.step:
        step_cfg = Config.fromfile(args.step)
        env = build_step(step_cfg, device)
        seconds = time_phases(env, make_batch(step_cfg, args.batch_size),
                              args.repeats)
        result['step_ms'] = sum(seconds[name] for name in AFTER_VIEWS
                                if name in seconds) * 1e3
        result['draw_over_step'] = result['draw_views_ms'] / result['step_ms']
        lines.append(
            f'  PMSN step of {osp.basename(args.step)} at batch '
            f'{args.batch_size}: {result["step_ms"]:.1f} ms; drawing the '
            f'views = {result["draw_over_step"] * 100:.1f} % of it')
    print('\n'.join(lines))
    return result


if __name__ == '__main__':
    main()
