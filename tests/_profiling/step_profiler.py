"""One training step of any config, phase by phase, as the CPU proxy of a
GPU step: what ``tools/speed/benchmark_step.py`` times and the tests count.

:func:`build_step` builds a config's model (with its ``data_preprocessor``),
optimiser and per-iteration hooks; :func:`make_batch` a batch of synthetic
decoded images as the config's loader hands it over (its ``train_pipeline``
without the file-loading transform, collated by its ``collate_fn``);
:func:`step_phases` splits mmengine's ``train_step`` and the per-iteration
hooks into :data:`PHASES`; :func:`count_phases` counts each phase's aten
ops and host syncs (:class:`~tests._profiling.op_counter.OpCounter`) and
blocking host-to-device copies
(:class:`~tests._profiling.host_copies.HostCopyCounter`). On a GPU each op is
at least one kernel launch and each sync drains the launch queue, so the
counts are the same on any device for the same code path.
"""
import contextlib
import copy
import logging
import statistics
import time
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np
import torch
from mmengine.config import Config
from mmengine.dataset import Compose
from mmengine.logging import MessageHub, MMLogger
from mmengine.optim import build_optim_wrapper
from mmengine.registry import FUNCTIONS, init_default_scope
from mmpretrain.registry import HOOKS, MODELS

import pmsn_mm  # noqa: F401  (registers the models and hooks it builds)
from .host_copies import HostCopyCounter
from .op_counter import OpCounter

__all__ = [
    'PHASES', 'AFTER_VIEWS', 'make_batch', 'pin_batch', 'StepCounter',
    'optimizer_steps', 'build_step', 'step_phases', 'count_phases', 'sync',
    'time_phases'
]

#: The phases of a step, in order.
PHASES = ('views', 'forward+loss', 'backward', 'grad clip', 'optimizer',
          'target update', 'hooks')
#: The phases of a training iteration between the views and the hooks.
AFTER_VIEWS = ('forward+loss', 'backward', 'grad clip', 'optimizer',
               'target update')
#: Transforms that read files: the synthetic images replace their output.
LOADERS = ('LoadImageFromFile', 'CheckedLoadImageFromFile',
           'LoadImageForViews')
#: Optimiser wrappers replaced by a plain ``OptimWrapper``.
AMP_WRAPPERS = ('AmpOptimWrapper', 'DeviceAwareAmpOptimWrapper')
#: pmsn_mm hooks that run every iteration (TargetEMAHook: 'target update').
ITER_HOOKS = ('NonFiniteGuardHook', 'PrototypeUsageHook',
              'PriorWeightWarmupHook')


def _view_size(cfg: Config) -> int:
    """The largest output size of the config's views (the images are made
    larger than it)."""
    pre = cfg.model.get('data_preprocessor') or cfg.get(
        'data_preprocessor') or {}
    sizes = [int(g['size']) for g in pre.get('views') or [] if g.get('size')]
    for t in cfg.train_dataloader.dataset.get('pipeline', []):
        for pipe in t.get('transforms', []) if t['type'] == 'MultiView' \
                else [[t]]:
            for p in pipe:
                if p.get('type') == 'RandomResizedCrop':
                    sizes.append(int(p['scale']))
                elif p.get('type') in ('Resize', 'RandomCrop',
                                       'CenterCrop') and p.get('scale'):
                    scale = p['scale']
                    sizes.append(int(max(scale) if isinstance(
                        scale, (tuple, list)) else scale))
    return max(sizes or [int(cfg.model.backbone.get('img_size', 224))])


def make_batch(cfg: Config, batch_size: int, seed: int = 0) -> dict:
    """A batch as the config's train loader would hand it to the model.

    Args:
        cfg: The config.
        batch_size: Images in the batch.
        seed: Seed of the images and of the pipeline's random transforms.

    Returns:
        The collated batch (``dict(inputs=..., data_samples=...)``).
    """
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    pipeline = [t for t in cfg.train_dataloader.dataset.get('pipeline', [])
                if t['type'] not in LOADERS]
    if not any(t['type'] == 'PackInputs' for t in pipeline):
        pipeline.append(dict(type='PackInputs'))
    transform = Compose(copy.deepcopy(pipeline))
    channels = int(cfg.model.backbone.get('in_channels', 3))
    size = _view_size(cfg)
    collate_cfg = cfg.train_dataloader.get('collate_fn') or dict(
        type='default_collate')
    # mixed sizes (as decoded images are) where the collate pads them
    mixed = collate_cfg['type'] == 'padded_collate'
    rng = np.random.default_rng(seed)
    np.random.seed(seed)
    samples = []
    for i in range(batch_size):
        h, w = (int(size * rng.uniform(1.0, 1.4)) if mixed else
                int(size * 1.2) for _ in range(2))
        shape = (h, w, channels) if channels > 1 else (h, w)
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        samples.append(transform(dict(img=img, img_shape=(h, w),
                                      ori_shape=(h, w), gt_label=i % 10,
                                      sample_idx=i)))
    collate = FUNCTIONS.get(collate_cfg['type'])
    kwargs = {k: v for k, v in collate_cfg.items() if k != 'type'}
    return collate(samples, **kwargs)


def pin_batch(data: Any) -> Any:
    """The batch with its tensors in pinned memory, as a loader with
    ``pin_memory=True`` hands it over (torch's ``pin_memory`` of the batch
    dict: the data samples are left as they are).

    Args:
        data: A collated batch.
    """
    if isinstance(data, torch.Tensor):
        return data.pin_memory()
    if isinstance(data, dict):
        return {k: v if k == 'data_samples' else pin_batch(v)
                for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(pin_batch(v) for v in data)
    return data


class StepCounter(OpCounter):
    """:class:`OpCounter` that does not count reads of the optimiser's step
    counts: torch keeps them on the host on purpose (non-capturable
    optimisers), so reading one is no device sync on any device.

    Args:
        host_state: The host-resident tensors whose reads are free.
    """

    def __init__(self, host_state: Sequence[torch.Tensor] = ()) -> None:
        super().__init__()
        self._free = {t.data_ptr() for t in host_state
                      if t.device.type == 'cpu'}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if (func.overloadpacket.__name__ == '_local_scalar_dense' and args
                and args[0].data_ptr() in self._free):
            self.ops += 1
            self.op_names['_local_scalar_dense'] += 1
            return func(*args, **(kwargs or {}))
        return super().__torch_dispatch__(func, types, args, kwargs)


def optimizer_steps(optim_wrapper) -> List[torch.Tensor]:
    """The ``step`` state tensors of an optimiser wrapper's optimiser(s).

    Args:
        optim_wrapper: An ``OptimWrapper`` or ``OptimWrapperDict``.
    """
    wrappers = getattr(optim_wrapper, 'values', lambda: [optim_wrapper])()
    return [state['step'] for w in wrappers
            for state in w.optimizer.state.values()
            if torch.is_tensor(state.get('step'))]


class _StandInRunner(types.SimpleNamespace):
    """What the per-iteration hooks read of a ``Runner``."""


def build_step(cfg: Config, device: Union[str, torch.device] = 'cpu',
               amp: Optional[str] = None, compile_backbone: bool = False,
               max_iters: int = 100) -> types.SimpleNamespace:
    """Build the model, optimiser and per-iteration hooks of a config.

    Args:
        cfg: The config.
        device: Where the model runs.
        amp: ``'bf16'`` to run forward+loss under bfloat16 autocast.
        compile_backbone: ``torch.compile`` the backbone.
        max_iters: The run length the schedules (EMA momentum, warm-ups)
            read.

    Returns:
        A namespace with ``model``, ``optim_wrapper``, ``hooks``, ``runner``
        and ``device``.
    """
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    device = torch.device(device)
    MessageHub.get_current_instance().update_info('max_iters', max_iters)
    model_cfg = copy.deepcopy(cfg.model)
    if 'data_preprocessor' not in model_cfg and cfg.get('data_preprocessor'):
        model_cfg.data_preprocessor = copy.deepcopy(cfg.data_preprocessor)
    model = MODELS.build(model_cfg)
    level = MMLogger.get_current_instance().level
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    if hasattr(model, 'init_weights'):
        model.init_weights()
    model = model.to(device).train()
    optim_cfg = copy.deepcopy(cfg.optim_wrapper)
    if optim_cfg.get('type') in AMP_WRAPPERS:  # --amp: autocast is ours
        optim_cfg.type = 'OptimWrapper'
        for key in ('dtype', 'loss_scale'):
            optim_cfg.pop(key, None)
    optim_wrapper = build_optim_wrapper(model, optim_cfg)
    MMLogger.get_current_instance().setLevel(level)
    if compile_backbone:
        try:  # in place: parameter names (the EMA's keys) stay the same
            model.backbone.compile()
        except Exception as exc:  # pragma: no cover (platform dependent)
            print(f'--compile: torch.compile failed on {device} '
                  f'({type(exc).__name__}: {exc}); running eagerly.')
    runner = _StandInRunner(
        model=model, optim_wrapper=optim_wrapper, iter=0,
        max_iters=max_iters, epoch=0, work_dir='.',
        message_hub=MessageHub.get_current_instance(),
        logger=MMLogger.get_current_instance(), visualizer=None)
    hooks = []
    hook_cfgs = list((cfg.get('default_hooks') or {}).values()) + list(
        cfg.get('custom_hooks') or [])
    for hook_cfg in hook_cfgs:
        if hook_cfg and hook_cfg.get('type') in ITER_HOOKS:
            hooks.append(HOOKS.build(copy.deepcopy(hook_cfg)))
    for hook in hooks:
        hook.before_train(runner)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) \
        if amp == 'bf16' else contextlib.nullcontext
    return types.SimpleNamespace(model=model, optim_wrapper=optim_wrapper,
                                 hooks=hooks, runner=runner, device=device,
                                 autocast=autocast)


def step_phases(env: types.SimpleNamespace,
                data: dict) -> Dict[str, Callable[[], None]]:
    """The phases of one training step as closures, run in order.

    Args:
        env: :func:`build_step`'s namespace.
        data: A collated batch (:func:`make_batch`).

    Returns:
        ``{phase: fn}`` in :data:`PHASES` order (``target update`` only for
        models with ``update_target``).
    """
    model, optim, runner = env.model, env.optim_wrapper, env.runner
    state: Dict[str, Any] = {}

    def views() -> None:
        state['data'] = model.data_preprocessor(data, True)

    def forward_loss() -> None:
        with env.autocast():
            losses = model.loss(state['data']['inputs'],
                                state['data']['data_samples'])
            state['loss'], state['log_vars'] = model.parse_losses(losses)

    def backward() -> None:
        optim.backward(state['loss'])

    def grad_clip() -> None:
        optim._clip_grad()  # what OptimWrapper.step does first

    def optimizer() -> None:
        optim.optimizer.step()
        optim.zero_grad()

    def target_update() -> None:
        model.update_target()

    def hooks() -> None:
        for hook in env.hooks:
            hook.before_train_iter(runner, 0, data)
        for hook in env.hooks:
            hook.after_train_iter(runner, 0, data, state['log_vars'])
        runner.iter += 1

    phases = {'views': views, 'forward+loss': forward_loss,
              'backward': backward}
    if optim.clip_grad_kwargs:
        phases['grad clip'] = grad_clip
    phases['optimizer'] = optimizer
    if hasattr(model, 'update_target'):
        phases['target update'] = target_update
    phases['hooks'] = hooks
    return phases


def count_phases(cfg: Config, batch_size: int,
                 device: Union[str, torch.device] = 'cpu',
                 amp: Optional[str] = None,
                 env: Optional[types.SimpleNamespace] = None,
                 warmup: int = 1) -> Dict[str, Dict[str, int]]:
    """Aten ops and host syncs of each phase of one training step.

    Args:
        cfg: The config.
        batch_size: Images per batch.
        device: Where the step runs.
        amp: ``'bf16'`` for bfloat16 autocast of forward+loss.
        env: A :func:`build_step` namespace to reuse (built otherwise).
        warmup: Uncounted steps first (lazy state, e.g. optimiser moments,
            is made in the first step).

    Returns:
        ``{phase: dict(ops=..., syncs=..., sync_ops={aten name: count},
        h2d=..., h2d_batch=..., h2d_sites={site: count})}``: ``h2d`` the
        blocking host-to-device copies, ``h2d_batch`` the ``non_blocking``
        uploads of the batch's own tensors
        (:class:`~tests._profiling.host_copies.HostCopyCounter`).
    """
    env = env or build_step(cfg, device, amp)
    data = make_batch(cfg, batch_size)
    pinned = bool(cfg.train_dataloader.get('pin_memory'))
    if env.device.type == 'cuda' and pinned:
        data = pin_batch(data)
    copies = HostCopyCounter(env.device)
    copies.mark_device(env.model, env.optim_wrapper)
    # on CUDA ask the tensors; a CPU run models the loader's pin_memory
    copies.mark_batch(data, pinned=None if env.device.type == 'cuda' else
                      pinned)
    # the warm-up under the copy counter too: what it builds once (device
    # constants, optimiser state) is then known to live on the device
    with copies, copies.phase('warm-up'):
        for _ in range(warmup):
            for fn in step_phases(env, data).values():
                fn()
    counts = {}
    steps = optimizer_steps(env.optim_wrapper)
    for name, fn in step_phases(env, data).items():
        with copies, copies.phase(name), StepCounter(steps) as counter:
            fn()
        counts[name] = dict(ops=counter.ops, syncs=counter.syncs,
                            sync_ops=dict(counter.sync_ops),
                            h2d=copies.blocking(name),
                            h2d_batch=copies.batch(name),
                            h2d_sites=dict(copies.sites[name]))
    return counts


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA; nothing elsewhere)."""
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def time_phases(env: types.SimpleNamespace, data: dict,
                repeats: int) -> Dict[str, float]:
    """Median wall seconds of each phase over ``repeats`` steps (after one
    warm-up step); the device is synchronised around each phase.

    Args:
        env: :func:`build_step`'s namespace.
        data: A collated batch.
        repeats: Timed steps.
    """
    times: Dict[str, List[float]] = {}
    for i in range(repeats + 1):
        for name, fn in step_phases(env, data).items():
            sync(env.device)
            start = time.perf_counter()
            fn()
            sync(env.device)
            if i:
                times.setdefault(name, []).append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}
