"""Helpers shared by the side-by-side benchmarks
(``benchmark_official_msn.py``, ``benchmark_loop.py``): the view groups and
ViT geometry of a PMSN config, the narrowing that makes a paper config
CPU-sized for both sides of a comparison alike, pmsn_mm's step as one
closure and the measurement of one step (time, images/s, peak memory,
syncs).
"""
import importlib.util
import os.path as osp
import re
import statistics
import sys
import time
import types
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from mmengine.config import Config, ConfigDict
from mmengine.registry import init_default_scope

# A maintainer script, run from a checkout: the step profiler is test code
# (tests/_profiling/), imported with the repository root on sys.path.
REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)
from tests._profiling.step_profiler import (StepCounter, build_step,  # noqa
                                            make_batch, optimizer_steps,
                                            step_phases)

#: What ``--narrow`` sets: a ViT-Tiny-wide encoder (official MSN's
#: ``init_model`` sizes its projector by model name: 192 is its narrowest
#: width) of 2 blocks, a 256-wide projector to 64-d, 64 prototypes; the
#: views become 4 patches wide (first group) and 2 patches wide (others).
NARROW = dict(embed_dims=192, num_layers=2, num_heads=3, hidden=256, out=64,
              prototypes=64, first_patches=4, other_patches=2)


def load_sibling(name: str) -> types.ModuleType:
    """A script of ``tools/`` as a module (they are no package).

    Args:
        name: The script's path under ``tools/speed/`` without
            ``.py`` (``'../train'``: ``tools/train.py``).
    """
    path = osp.normpath(osp.join(osp.dirname(osp.abspath(__file__)),
                                 f'{name}.py'))
    key = 'pmsn_bench_' + re.sub(r'\W', '_', osp.relpath(
        path, osp.dirname(osp.dirname(path))))
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def preprocessor(cfg: Config) -> ConfigDict:
    """The model's data pre-processor config (the model's or top-level)."""
    pre = cfg.model.get('data_preprocessor') or cfg.get('data_preprocessor')
    if not pre or pre.get('type') != 'BatchAugmentPreprocessor':
        raise ValueError('the side-by-side benchmarks need a config whose '
                         'data_preprocessor is a BatchAugmentPreprocessor '
                         f'(views drawn on the device), got {pre!r}')
    return pre


def view_groups(cfg: Config) -> List[Tuple[int, int]]:
    """``(num_views, size)`` of each view group, in order (target and random
    views first).

    Args:
        cfg: A PMSN config with a ``BatchAugmentPreprocessor``.
    """
    pre = preprocessor(cfg)
    groups = pre.get('views') or [dict(num_views=pre.get('num_views', 2),
                                       size=pre.get('size'))]
    img_size = cfg.model.backbone.get('img_size', 224)
    return [(int(g.get('num_views', 1)), int(g.get('size') or img_size))
            for g in groups]


def vit_geometry(cfg: Config) -> Dict[str, int]:
    """Width, depth, heads, MLP width, patch size, image size and channels
    of the config's ``MSNViT`` backbone.

    Args:
        cfg: A PMSN config.
    """
    backbone = cfg.model.backbone
    if backbone.get('type') != 'MSNViT':
        raise ValueError('the side-by-side benchmarks compare a ViT '
                         f'(model.backbone.type MSNViT), got {backbone.type}')
    arch = backbone.get('arch', 'deit-base')
    if isinstance(arch, str):
        init_default_scope('mmpretrain')
        from mmpretrain.registry import MODELS
        arch = MODELS.get('MSNViT').arch_zoo[arch]
    return dict(embed_dims=int(arch['embed_dims']),
                num_layers=int(arch['num_layers']),
                num_heads=int(arch['num_heads']),
                feedforward_channels=int(arch['feedforward_channels']),
                patch_size=int(backbone.get('patch_size', 16)),
                img_size=int(backbone.get('img_size', 224)),
                in_channels=int(backbone.get('in_channels', 3)))


def narrow_config(cfg: Config) -> None:
    """Make a PMSN ViT config CPU-sized in place (:data:`NARROW`): encoder,
    projector, prototypes and view sizes; the number of views, the
    patch-drop ratio, the loss and the optimiser stay the config's.

    Args:
        cfg: A PMSN config (``MSNViT`` backbone, ``MSNProjector`` neck).
    """
    n = NARROW
    patch = vit_geometry(cfg)['patch_size']
    model = cfg.model
    model.backbone.arch = dict(
        embed_dims=n['embed_dims'], num_layers=n['num_layers'],
        num_heads=n['num_heads'], feedforward_channels=4 * n['embed_dims'])
    model.backbone.img_size = n['first_patches'] * patch
    model.neck.update(in_channels=n['embed_dims'],
                      hidden_channels=n['hidden'], out_channels=n['out'])
    model.head.update(in_channels=n['out'], num_prototypes=n['prototypes'])
    sizes = [n['first_patches'] * patch] + [n['other_patches'] * patch] * 9
    pre = preprocessor(cfg)
    lists = [pre.get('views')] + [
        t.get('views') for t in cfg.train_dataloader.dataset.get(
            'pipeline', [])]
    for views in lists:
        for group, size in zip(views or [], sizes):
            group['size'] = size
    if not pre.get('views'):
        pre['size'] = sizes[0]


def build_ours(cfg: Config, batch: int, device: torch.device,
               amp: Optional[str]) -> Callable[[], None]:
    """pmsn_mm's training step (``tests/_profiling/step_profiler.py``'s
    phases in order) on a decoded batch (its ``make_batch``), as a closure.

    Args:
        cfg: The config.
        batch: Images per batch.
        device: Where the step runs.
        amp: ``'bf16'``: bfloat16 autocast of forward+loss.
    """
    env = build_step(cfg, device, amp)
    data = make_batch(cfg, batch)

    def step():
        for fn in step_phases(env, data).values():
            fn()

    step.host_state = lambda: optimizer_steps(env.optim_wrapper)
    return step


def _sync(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def count_syncs(step: Callable, device: torch.device) -> int:
    """Syncs of one step: on CUDA the synchronising CUDA calls that
    ``torch.cuda.set_sync_debug_mode('warn')`` reports; elsewhere the host
    reads of tensor values that ``step_profiler.StepCounter`` (an
    ``OpCounter``) sees, reads of the optimiser's host step counters left
    out.

    Args:
        step: The step closure (with ``host_state()``: those counters).
        device: Where it runs.
    """
    if device.type == 'cuda':
        _sync(device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            torch.cuda.set_sync_debug_mode('warn')
            try:
                step()
            finally:
                torch.cuda.set_sync_debug_mode(0)
        return sum('synchroniz' in str(w.message) for w in caught)
    counter = StepCounter(step.host_state())
    with counter:
        step()
    return counter.syncs


def measure(step: Callable, batch: int, device: torch.device,
            repeats: int) -> Dict[str, Any]:
    """Median ms, images/s, peak MiB (CUDA; None elsewhere) and syncs of a
    step, after one warm-up step; the device is synchronised around each.

    Args:
        step: The step closure.
        batch: Its images per step.
        device: Where it runs.
        repeats: Timed steps.
    """
    step()  # warm-up: lazy optimiser state, caches
    syncs = count_syncs(step, device)
    if device.type == 'cuda':
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - start)
    ms = statistics.median(times) * 1e3
    peak = (torch.cuda.max_memory_allocated(device) / 2**20
            if device.type == 'cuda' else None)
    return dict(ms=ms, images_per_s=batch / ms * 1e3, peak_mib=peak,
                syncs=syncs)
