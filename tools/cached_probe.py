"""Linear probe on cached frozen features: the fast mode of the probe configs.

With a frozen backbone whose features do not depend on training mode, and a
training pipeline without random augmentation, every epoch of
``tools/train.py CONFIG`` feeds the probes the very same features.
:func:`run_cached_probe` computes them once (backbone + neck), then trains the
probes on the cached features with the config's own optimiser, parameter
schedulers, epochs, sampler (same seed, so same batch order) and evaluator,
through ``PMSNRunner``; up to floating-point summation order the trained
probes and accuracies are those of the online run. The checks here
(:func:`prepare_config`, :func:`check_frozen`) refuse configs for which that
would not hold. The work dir is treated as ``tools/train.py`` treats it,
decided by :func:`pmsn_mm.engine.resume.plan_run` before the features are
extracted: a run into a work dir holding checkpoints is refused unless it
resumes (``resume``, the config's checkpoints of the probes) or overwrites
(``overwrite_work_dir``), and resuming a finished run says so.
``tools/linear_probe_cached.py`` is the command line; this module, only
that tool's, lives beside it.
"""
import copy
import os.path as osp
import time
from typing import Dict, List, Optional, Sequence, Tuple, cast

import torch
from cached_features import CachedFeatureProbe, CachedFeatures
from mmengine.config import Config
from mmengine.model import BaseModel
from mmengine.optim import build_optim_wrapper
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from mmpretrain.registry import MODELS
from torch import Tensor, nn
from torch.nn.modules.batchnorm import _BatchNorm

from pmsn_mm.engine.resume import plan_run
from pmsn_mm.engine.runners.pmsn_runner import PMSNRunner
from pmsn_mm.evaluation.metrics.frozen_features import extract_features
from pmsn_mm.utils.refusal import active_console

#: Transforms whose output depends only on their input (allow-list; anything
#: else, e.g. RandomResizedCrop or RandomFlip, is refused).
DETERMINISTIC_TRANSFORMS = frozenset({
    'LoadImageFromFile', 'CheckedLoadImageFromFile', 'Resize', 'ResizeEdge',
    'CenterCrop', 'Pad',
    'Normalize', 'ToNumpy', 'ToPIL', 'NumpyToPIL', 'PILToNumpy',
    'ImageToTensor', 'Transpose', 'PackInputs'
})

#: Untimed online iterations before the timed ones (lazy init, caches).
WARMUP_ITERS = 2


def _type_name(transform: dict) -> str:
    kind = transform.get('type')
    name = kind if isinstance(kind, str) else getattr(kind, '__name__', kind)
    return str(name).split('.')[-1]


def dataset_pipeline(dataset_cfg: dict) -> List[dict]:
    """The pipeline of a dataset config, looking inside dataset wrappers.

    Args:
        dataset_cfg: Dataset config (e.g. ``train_dataloader.dataset``).

    Returns:
        The list of transform configs.
    """
    while 'pipeline' not in dataset_cfg and 'dataset' in dataset_cfg:
        dataset_cfg = dataset_cfg['dataset']
    return list(dataset_cfg.get('pipeline', []))


def check_deterministic(pipeline: Sequence[dict], which: str) -> None:
    """Refuse pipelines with a transform outside the allow-list.

    Args:
        pipeline: Transform configs.
        which: Name of the pipeline for the message.
    """
    bad = [_type_name(t) for t in pipeline
           if _type_name(t) not in DETERMINISTIC_TRANSFORMS]
    if bad:
        raise ValueError(
            f'The {which} pipeline has transforms that are random or not '
            f'known to be deterministic: {bad}. Cached features need the same '
            'image every epoch; allowed transforms: '
            f'{sorted(DETERMINISTIC_TRANSFORMS)}. Train online with '
            'tools/train.py, or pass --use-test-pipeline to train the probes '
            'on the (deterministic) test-time pipeline.')


def prepare_config(cfg: Config, use_test_pipeline: bool = False) -> Config:
    """A copy of ``cfg`` whose pipelines are checked to be deterministic.

    Args:
        cfg: A linear-probe config.
        use_test_pipeline: First replace the train pipeline by the val one.

    Returns:
        The (possibly changed) copy.
    """
    cfg = copy.deepcopy(cfg)
    if use_test_pipeline:
        inner = cfg.train_dataloader.dataset
        while 'pipeline' not in inner and 'dataset' in inner:
            inner = inner.dataset
        inner.pipeline = copy.deepcopy(
            dataset_pipeline(cfg.val_dataloader.dataset))
    check_deterministic(dataset_pipeline(cfg.train_dataloader.dataset),
                        'train')
    check_deterministic(dataset_pipeline(cfg.val_dataloader.dataset), 'val')
    return cfg


def set_pretrained(cfg: dict, checkpoint: str) -> int:
    """Point every ``Pretrained`` init config inside ``cfg`` at a checkpoint.

    Args:
        cfg: A (model) config, changed in place.
        checkpoint: Checkpoint path.

    Returns:
        How many init configs were set.
    """
    count = 0
    if isinstance(cfg, dict):
        if cfg.get('type') == 'Pretrained':
            cfg['checkpoint'] = checkpoint
            count += 1
        for value in cfg.values():
            count += set_pretrained(value, checkpoint)
    elif isinstance(cfg, (list, tuple)):
        for value in cfg:
            count += set_pretrained(value, checkpoint)
    return count


def _encoder_parts(model: nn.Module) -> List[Tuple[str, nn.Module]]:
    parts = [('backbone', cast(nn.Module, model.backbone))]
    if getattr(model, 'neck', None) is not None:
        parts.append(('neck', cast(nn.Module, model.neck)))
    return parts


def check_frozen(model: nn.Module) -> None:
    """Refuse models whose backbone/neck could give other features online.

    The backbone and neck must have no trainable parameter and, in
    ``model.train()`` mode (as in online training), no BatchNorm using batch
    statistics and no active dropout or drop-path.

    Args:
        model: An mmpretrain ``ImageClassifier``.
    """
    trainable = [f'{part}.{name}' for part, module in _encoder_parts(model)
                 for name, p in module.named_parameters() if p.requires_grad]
    if trainable:
        raise ValueError(
            f'Cached features need a frozen backbone and neck, but '
            f'{len(trainable)} parameters are trainable (e.g. '
            f'{trainable[:3]}); set frozen_stages (ViT: num_layers, ResNet: '
            '4).')
    was_training = model.training
    model.train()
    active = []
    for part, module in _encoder_parts(model):
        for name, m in module.named_modules():
            if not m.training:
                continue
            p = getattr(m, 'p', getattr(m, 'drop_prob', 0.0))
            if isinstance(m, _BatchNorm) or (
                    isinstance(p, float) and p > 0
                    and 'drop' in type(m).__name__.lower()):
                active.append(f'{part}.{name} ({type(m).__name__})')
    model.train(was_training)
    if active:
        raise ValueError(
            'These backbone/neck modules behave differently in training mode, '
            f'so online features would differ from cached ones: {active[:3]}; '
            'set norm_eval=True (BatchNorm) and drop/drop_path rates to 0.')


def _features(model: nn.Module, dataloader) -> Tuple[Tensor, Tensor]:
    """Frozen backbone + neck features (``model.extract_feat``, the shared
    :func:`~pmsn_mm.evaluation.extract_features`) and labels."""
    feats, labels = extract_features(model, dataloader, 'backbone',
                                     label_keys=('gt_label', ), progress=True)
    return feats, labels['gt_label']


def _extraction_loader(dl_cfg: dict, batch_size: Optional[int], seed: int):
    cfg = copy.deepcopy(dl_cfg)
    cfg['sampler'] = dict(type='DefaultSampler', shuffle=False)
    cfg['drop_last'] = False
    if batch_size:
        cfg['batch_size'] = batch_size
    if not cfg.get('num_workers'):
        cfg['persistent_workers'] = False
    return Runner.build_dataloader(cfg, seed=seed)


def _cached_loader(dl_cfg: dict, dataset: CachedFeatures,
                   sampler: dict) -> dict:
    return dict(
        dataset=dataset,
        sampler=copy.deepcopy(sampler),
        batch_size=dl_cfg['batch_size'],
        drop_last=dl_cfg.get('drop_last', False),
        num_workers=0,
        collate_fn=dict(type='default_collate'))


def _num_val_runs(train_cfg: dict, val_cfg, total_epochs: int) -> int:
    if val_cfg is None:
        return 0
    interval = train_cfg.get('val_interval', 1)
    begin = train_cfg.get('val_begin', 1)
    return sum(1 for e in range(1, total_epochs + 1)
               if e >= begin and (e % interval == 0 or e == total_epochs))


def time_online(model: BaseModel, cfg: Config, dataloader,
                iters: int) -> float:
    """Seconds per real online training iteration (data + forward + step).

    Runs on a copy of ``model``, after :data:`WARMUP_ITERS` iterations.

    Args:
        model: The initialised full probe model.
        cfg: Config (its ``optim_wrapper``).
        dataloader: The online training loader.
        iters: Iterations to time (>= 1).

    Returns:
        Mean seconds per iteration.
    """
    online = copy.deepcopy(model)
    online.train()
    optim_wrapper = build_optim_wrapper(online, copy.deepcopy(
        cfg.optim_wrapper))
    batches = iter(dataloader)
    elapsed, done = 0.0, -WARMUP_ITERS
    while done < iters:
        start = time.perf_counter()
        try:
            data = next(batches)
        except StopIteration:
            batches = iter(dataloader)
            continue
        online.train_step(data, optim_wrapper)
        if done >= 0:
            elapsed += time.perf_counter() - start
        done += 1
    return elapsed / iters


def run_cached_probe(cfg: Config,
                     checkpoint: str,
                     work_dir: str,
                     use_test_pipeline: bool = False,
                     batch_size: Optional[int] = None,
                     online_iters: int = 5) -> Dict[str, object]:
    """Extract features once, train the probes on them, evaluate, time.

    The work dir is decided on first (:func:`pmsn_mm.engine.resume.plan_run`
    on ``cfg.resume``, ``cfg.load_from`` and ``cfg.overwrite_work_dir``, as
    for ``tools/train.py``), so a refused or finished run extracts nothing.

    Args:
        cfg: A linear-probe config.
        checkpoint: Encoder checkpoint for every ``Pretrained`` init config
            (``'none'``: keep the config's own init).
        work_dir: Output folder (the run's work dir).
        use_test_pipeline: Train on the val pipeline (no augmentation).
        batch_size: Feature-extraction batch size (default: the config's).
        online_iters: Online iterations to time (0: estimate from the
            feature pass instead).

    Returns:
        ``metrics`` (final validation), ``timings`` (seconds),
        ``speedup`` and ``checkpoint`` (the written probe).
    """
    if online_iters < 0:
        raise ValueError(f'online_iters must be >= 0 but is {online_iters}.')
    cfg = prepare_config(cfg, use_test_pipeline)
    cfg.work_dir = work_dir
    plan = plan_run(cfg)  # resume, start or overwrite; refusals come here
    init_default_scope(cfg.get('default_scope', 'mmpretrain'))
    model_cfg = copy.deepcopy(cfg.model)
    if cfg.get('data_preprocessor') is not None:
        model_cfg.setdefault('data_preprocessor', cfg.data_preprocessor)
    if checkpoint != 'none' and set_pretrained(model_cfg, checkpoint) == 0:
        raise ValueError('The model config has no Pretrained init_cfg to load '
                         f'{checkpoint} into; add one to the backbone.')
    seed = cfg.get('randomness', {}).get('seed', 0) or 0
    model = MODELS.build(model_cfg)
    model.init_weights()
    check_frozen(model)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    model.to(device).eval()
    console = active_console()  # held by the tool: show the progress now
    if console is not None:
        console.release()

    timings = {}
    train_loader = _extraction_loader(cfg.train_dataloader, batch_size, seed)
    val_loader = _extraction_loader(cfg.val_dataloader, batch_size, seed)
    start = time.perf_counter()
    train_x, train_y = _features(model, train_loader)
    timings['extract_train'] = time.perf_counter() - start
    start = time.perf_counter()
    val_x, val_y = _features(model, val_loader)
    timings['extract_val'] = time.perf_counter() - start
    for name, feats, loader in (('train', train_x, train_loader),
                                ('val', val_x, val_loader)):
        if len(feats) != len(loader.dataset):
            raise RuntimeError(f'{len(feats)} {name} features for '
                               f'{len(loader.dataset)} samples.')
    print(f'[cached] features: train {tuple(train_x.shape)} in '
          f"{timings['extract_train']:.1f} s, val {tuple(val_x.shape)} in "
          f"{timings['extract_val']:.1f} s")

    metainfo = getattr(train_loader.dataset, 'metainfo', None)
    # the config's CheckpointHook saves the probes (what --resume continues
    # from); the full model is saved below
    default_hooks = copy.deepcopy(cfg.get('default_hooks', {}))
    if cfg.get('custom_hooks'):
        print('[cached] custom_hooks are not run on cached features: '
              f"{[h['type'] for h in cfg.custom_hooks]}")
    probe = CachedFeatureProbe(model.head)
    runner = PMSNRunner(
        model=probe,
        work_dir=work_dir,
        train_dataloader=_cached_loader(
            cfg.train_dataloader, CachedFeatures(train_x, train_y, metainfo),
            cfg.train_dataloader.sampler),
        val_dataloader=_cached_loader(
            cfg.val_dataloader, CachedFeatures(val_x, val_y, metainfo),
            dict(type='DefaultSampler', shuffle=False)),
        val_evaluator=copy.deepcopy(cfg.val_evaluator),
        val_cfg=copy.deepcopy(cfg.get('val_cfg', dict())),
        train_cfg=copy.deepcopy(cfg.train_cfg),
        optim_wrapper=copy.deepcopy(cfg.optim_wrapper),
        param_scheduler=copy.deepcopy(cfg.get('param_scheduler')),
        auto_scale_lr=copy.deepcopy(cfg.get('auto_scale_lr')),
        default_hooks=default_hooks,
        log_processor=copy.deepcopy(cfg.get('log_processor', dict())),
        log_level=cfg.get('log_level', 'INFO'),
        randomness=copy.deepcopy(cfg.get('randomness', dict(seed=None))),
        default_scope=cfg.get('default_scope', 'mmpretrain'),
        experiment_name=f'cached_probe_{time.time_ns()}',
        resume=cfg.get('resume', False),
        load_from=cfg.get('load_from'),
        run_plan=plan,
        cfg=cfg)
    start = time.perf_counter()
    runner.train()
    timings['train_probes'] = time.perf_counter() - start
    metrics = runner.val()  # the final probes (as tools/test.py would)

    out = osp.join(work_dir, 'probe_cached.pth')
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({'state_dict': state, 'meta': dict(
        mode='cached', checkpoint=checkpoint, metrics=metrics)}, out)

    iters_per_epoch = len(runner.train_dataloader)
    train_cfg = cfg.train_cfg
    epochs = train_cfg.get('max_epochs') or -(
        -train_cfg.get('max_iters', iters_per_epoch) // iters_per_epoch)
    total_iters = train_cfg.get('max_iters', epochs * iters_per_epoch)
    n_val = _num_val_runs(train_cfg, cfg.get('val_cfg'), epochs)
    if online_iters > 0:
        online_loader = Runner.build_dataloader(
            copy.deepcopy(cfg.train_dataloader), seed=seed)
        per_iter = time_online(model.train(), cfg, online_loader,
                               online_iters)
        how = f'measured over {online_iters} online iterations'
    else:
        per_iter = (timings['extract_train'] / iters_per_epoch +
                    timings['train_probes'] / total_iters)
        how = 'estimated as feature pass + cached probe step'
    online = total_iters * per_iter + n_val * timings['extract_val']
    cached = sum(timings.values())
    timings.update(online_s_per_iter=per_iter, online_estimate=online,
                   cached_total=cached)
    speedup = online / cached
    print(f'[cached] probes: {total_iters} iterations + {n_val} evaluations '
          f"in {timings['train_probes']:.1f} s; total with extraction "
          f'{cached:.1f} s')
    print(f'[online] {per_iter:.4f} s/iteration ({how}); online run = '
          f'{total_iters} x {per_iter:.4f} s + {n_val} val passes x '
          f"{timings['extract_val']:.1f} s ~ {online:.1f} s")
    print(f'cached mode is {speedup:.1f}x faster than online mode '
          f'(~{online:.1f} s vs {cached:.1f} s); metrics: {metrics}')
    return dict(metrics=metrics, timings=timings, speedup=speedup,
                checkpoint=out)
