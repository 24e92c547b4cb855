"""Time one epoch of index generation for the class-aware samplers.

Uses a synthetic iNat18-sized label set (437,513 images, 8,142 classes,
Zipf-like counts from 2 to ~1000) in mmpretrain's ``BaseDataset`` (an
annotation file of labels only: no image is read) and reports, per sampler
setting, the median wall time of several epochs, the peak memory
(tracemalloc peak of one epoch, and the process max RSS) and the sampler's
set-up (``init``: reading the labels with ``get_gt_labels()`` included). No
data or network needed::

    python tools/speed/benchmark_samplers.py
    python tools/speed/benchmark_samplers.py --cases 960:1920 2:1024
"""
import argparse
import json
import os.path as osp
import resource
import statistics
import tempfile
import time
import tracemalloc
from typing import Callable, List, Optional, Tuple

import numpy as np
from mmengine.dataset import DefaultSampler
from mmpretrain.datasets import BaseDataset

from pmsn_mm.datasets.samplers import (ClassFrequencySampler,
                                       ClassStratifiedBatchSampler)


def label_dataset(labels: np.ndarray, folder: str) -> BaseDataset:
    """mmpretrain's ``BaseDataset`` over an annotation file that holds only
    the labels (the samplers read labels, ``get_gt_labels()``, and never an
    image).

    Args:
        labels: Int array of shape (N,).
        folder: Where the annotation file goes.
    """
    path = osp.join(folder, 'labels.json')
    with open(path, 'w') as f:
        json.dump(dict(metainfo={}, data_list=[
            dict(img_path=f'{i}.jpg', gt_label=int(y))
            for i, y in enumerate(labels)]), f)
    return BaseDataset(ann_file=path, data_prefix='')


def zipf_counts(num_images: int, num_classes: int, max_count: int,
                min_count: int) -> np.ndarray:
    """Long-tailed (Zipf-Mandelbrot) class sizes.

    ``n_r = max_count * ((1 + r / r0) / (1 + 1 / r0)) ** -a`` for ranks
    ``r = 1..C``, with ``a`` set so that ``n_C = min_count`` and ``r0`` found
    by bisection so the sizes sum to ``num_images``; the rounding residue is
    spread over the largest classes.

    Args:
        num_images: Total number of images.
        num_classes: Number of classes.
        max_count: Size of the largest class.
        min_count: Size of the smallest class.

    Returns:
        np.ndarray: Int64 counts of shape (num_classes,), descending.
    """
    ranks = np.arange(1, num_classes + 1, dtype=np.float64)

    def counts_for(log_r0: float) -> np.ndarray:
        r0 = np.exp(log_r0)
        a = np.log(max_count / min_count) / np.log(
            (1 + num_classes / r0) / (1 + 1 / r0))
        sizes = max_count * ((1 + ranks / r0) / (1 + 1 / r0))**-a
        return np.maximum(np.floor(sizes), min_count).astype(np.int64)

    lo, hi = np.log(1e-3), np.log(1e7)
    for _ in range(200):
        mid = (lo + hi) / 2
        if counts_for(mid).sum() > num_images:
            hi = mid
        else:
            lo = mid
    counts = counts_for(lo)
    residue = num_images - int(counts.sum())
    if not 0 <= residue <= num_classes:
        raise ValueError('cannot build a long-tailed profile with these '
                         'sizes; change --num-images/--max-count/--min-count')
    counts[:residue] += 1
    return counts


def measure(fn: Callable[[], object], repeats: int) -> Tuple[float, float]:
    """Median seconds over ``repeats`` calls, and tracemalloc peak (MiB)."""
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def parse_case(text: str) -> Tuple[int, int]:
    """``'K:B'`` -> (classes_per_batch, global_batch)."""
    k, b = text.split(':')
    return int(k), int(b)


def main(argv: Optional[List[str]] = None) -> None:
    """Run the benchmark and print one line per setting.

    Args:
        argv: Command-line arguments (defaults to ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num-images', type=int, default=437_513)
    parser.add_argument('--num-classes', type=int, default=8_142)
    parser.add_argument('--max-count', type=int, default=1_000)
    parser.add_argument('--min-count', type=int, default=2)
    parser.add_argument(
        '--cases',
        type=parse_case,
        nargs='+',
        default=[(960, 1920), (960, 3840), (8, 4096), (2, 1024)],
        help='ClassStratifiedBatchSampler settings as K:GLOBAL_BATCH; '
        'replacement=True is used (and reported) when a class has fewer '
        'than GLOBAL_BATCH / K images')
    parser.add_argument('--powers',
                        type=float,
                        nargs='+',
                        default=[0.5, 1.0, 0.0],
                        help='ClassFrequencySampler powers')
    parser.add_argument('--repeats',
                        type=int,
                        default=7,
                        help='timed epochs per setting (median reported)')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)

    counts = zipf_counts(args.num_images, args.num_classes, args.max_count,
                         args.min_count)
    labels = np.repeat(np.arange(counts.shape[0]), counts)
    np.random.default_rng(args.seed).shuffle(labels)
    with tempfile.TemporaryDirectory() as folder:
        dataset = label_dataset(labels, folder)
    print(f'synthetic dataset: {len(labels)} images, {counts.shape[0]} '
          f'classes, sizes {counts.min()}..{counts.max()} '
          f'(median {int(np.median(counts))}); 1 process, so batch_size = '
          f'global batch; times are medians of {args.repeats} epochs')

    for k, global_batch in args.cases:
        per_class = global_batch // k
        replacement = bool(counts.min() < per_class)
        start = time.perf_counter()
        sampler = ClassStratifiedBatchSampler(
            DefaultSampler(dataset, seed=args.seed),
            batch_size=global_batch,
            classes_per_batch=k,
            replacement=replacement)
        build = time.perf_counter() - start
        epoch = [0]

        def one_epoch_array() -> np.ndarray:
            epoch[0] += 1
            sampler.sampler.set_epoch(epoch[0])
            return sampler.epoch_batches()

        def one_epoch_list() -> list:
            epoch[0] += 1
            sampler.sampler.set_epoch(epoch[0])
            return list(sampler)

        t_arr, mem = measure(one_epoch_array, args.repeats)
        t_list, _ = measure(one_epoch_list, args.repeats)
        note = (f'replacement=True (min class size {counts.min()} < '
                f'{per_class} images per class per batch)'
                if replacement else 'replacement=False')
        print(f'ClassStratifiedBatchSampler K={k:4d} B={global_batch:5d} '
              f'iters={sampler.num_batches:4d}: indices {t_arr * 1e3:7.1f} '
              f'ms, as list {t_list * 1e3:7.1f} ms, peak '
              f'{mem:6.1f} MiB, init {build * 1e3:6.1f} ms; {note}')

    for power in args.powers:
        sampler = ClassFrequencySampler(dataset, seed=args.seed, power=power)
        epoch = [0]

        def one_epoch() -> list:
            epoch[0] += 1
            sampler.set_epoch(epoch[0])
            return list(sampler)

        t, mem = measure(one_epoch, args.repeats)
        print(f'ClassFrequencySampler power={power:4.2f}: {len(sampler)} '
              f'indices {t * 1e3:7.1f} ms (as list), peak {mem:6.1f} MiB')

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f'process max RSS: {rss:.0f} MiB')


if __name__ == '__main__':
    main()
