"""Command-line changes to a config: ``--cfg-options`` keys checked before
they are merged, and short smoke runs of any training loop.

The helper of ``tools/train.py`` and ``tools/test.py``, which import it
from beside them (a script's folder is on ``sys.path``; imported instead of
run, they add it), so it is not part of the ``pmsn_mm`` package.

``--cfg-options train_dataloder.batch_size=4`` makes a new top-level section
that nothing reads: mmengine merges it and the run trains at the config's
batch size. :func:`check_option_keys` refuses an option whose top-level key
neither the config has nor the runner reads, with the closest keys.
:func:`short_run` makes any config (iteration- or epoch-based) train ``N``
iterations, validate once and save ``iter_N.pth``, the same way for both
loops (``tools/train.py --max-iters N``).
"""
import difflib
import inspect
from typing import Any, Dict, List, Mapping, MutableMapping, cast

from pmsn_mm.config import ConfigNotFoundError, UnknownOptionError

#: Top-level keys that mmengine's Runner (and ``PMSNRunner``) read besides
#: the ``Runner.__init__`` arguments.
RUNNER_READS = frozenset({
    'custom_imports', 'runner_type', 'model_wrapper_cfg', 'compile',
    'strategy', 'find_unused_parameters', 'sync_bn', 'auto_scale_lr',
    'default_scope', 'launcher', 'work_dir', 'load_from', 'resume',
    'experiment_name', 'overwrite_work_dir'
})


def runner_keys() -> frozenset:
    """Every top-level key mmengine's ``Runner`` builds or reads."""
    from mmengine.runner import Runner
    params = inspect.signature(Runner.__init__).parameters
    return frozenset(name for name in params if name != 'self') | RUNNER_READS


def check_option_keys(cfg: Mapping, options: Mapping[str, Any]) -> None:
    """Refuse ``--cfg-options`` whose top-level key nothing reads.

    Args:
        cfg: The loaded config, before the options are merged.
        options: ``DictAction``'s ``{dotted key: value}``.

    Raises:
        UnknownOptionError: A ``KeyError`` naming each such option and the
            closest existing keys, e.g. ``--cfg-options
            train_dataloder.batch_size: no config section 'train_dataloder'
            (did you mean 'train_dataloader'?)``.
    """
    known = set(cfg.keys()) | runner_keys()
    problems: List[str] = []
    for option in options:
        top = option.split('.', 1)[0]
        if top in known:
            continue
        close = difflib.get_close_matches(top, sorted(known), n=3)
        hint = f' (did you mean {close[0]!r}?)' if close else ''
        problems.append(
            f'--cfg-options {option}: no config section {top!r}{hint}; the '
            'config has no such key and the runner reads none, so the value '
            'would be ignored')
    if problems:
        raise UnknownOptionError('\n'.join(problems))


def _is_epoch_loop(loop: Mapping) -> bool:
    kind = loop.get('type')
    if kind is None:
        return bool(loop.get('by_epoch', 'max_epochs' in loop))
    name = kind if isinstance(kind, str) else getattr(kind, '__name__', '')
    return 'max_epochs' in loop or name.split('.')[-1].startswith('Epoch')


def short_run(cfg: Any, iters: int) -> List[str]:
    """Make ``cfg`` train ``iters`` iterations, then validate once (if it
    validates) and save ``iter_<iters>.pth``, whatever its loop.

    An iteration-based loop gets ``max_iters=iters`` and
    ``val_interval=iters``. An epoch-based one becomes mmengine's
    ``IterBasedTrainLoop`` of ``iters`` iterations (the loader restarts
    when a small dataset runs out: its ``DefaultSampler`` becomes an
    ``InfiniteSampler`` with the same shuffle; a batch sampler is kept),
    checkpoints and logs counted in iterations. Schedules keep the
    config's lengths (a smoke run checks that everything runs, not the
    schedule): epoch-based schedulers converted to iterations step, the
    others stay at their start.

    Args:
        cfg: The merged config, changed in place.
        iters: Iterations to train (>= 1).

    Returns:
        What was changed, one ``key=value`` per entry (for the log).
    """
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise ValueError(f'--max-iters must be an int >= 1, got {iters!r}.')
    loop = cfg.get('train_cfg')
    if not isinstance(loop, Mapping):
        raise ValueError('--max-iters needs a config with a train_cfg.')
    validates = cfg.get('val_cfg') is not None and cfg.get(
        'val_dataloader') is not None
    changes: Dict[str, object] = {}
    if _is_epoch_loop(loop):
        new_loop = dict(type='IterBasedTrainLoop', max_iters=iters)
        if validates:
            new_loop['val_interval'] = iters
        cfg.train_cfg = new_loop
        changes['train_cfg'] = new_loop
        sampler = (cfg.get('train_dataloader') or {}).get('sampler')
        if isinstance(sampler, Mapping) and str(sampler.get(
                'type', '')).split('.')[-1] == 'DefaultSampler':
            infinite = dict(type='InfiniteSampler',
                            shuffle=sampler.get('shuffle', True))
            cfg.train_dataloader.sampler = infinite
            changes['train_dataloader.sampler'] = infinite
        if isinstance(cfg.get('log_processor'), Mapping):
            cfg.log_processor.by_epoch = False
            changes['log_processor.by_epoch'] = False
    else:
        # the config's dicts (mutable)
        cast(MutableMapping, loop)['max_iters'] = iters
        changes['train_cfg.max_iters'] = iters
        if validates:
            cast(MutableMapping, loop)['val_interval'] = iters
            changes['train_cfg.val_interval'] = iters
    checkpoint = (cfg.get('default_hooks') or {}).get('checkpoint')
    if isinstance(checkpoint, Mapping):
        cast(MutableMapping, checkpoint).update(
            by_epoch=False, interval=iters, save_last=True)
        changes['default_hooks.checkpoint'] = (
            f'by_epoch=False, interval={iters}, save_last=True')
    return [f'{k}={v}' for k, v in changes.items()]


def check_config_path(path: str) -> str:
    """``path`` if the file exists; else a ``FileNotFoundError`` naming the
    shipped configs closest to it (by file name).

    Args:
        path: The config path given on the command line.

    Returns:
        ``path``.
    """
    import glob
    import os.path as osp

    from pmsn_mm.utils.model_index import model_index_root
    if osp.isfile(path):
        return path
    root = model_index_root()
    shipped = [] if root is None else sorted(
        p for p in glob.glob(osp.join(root, 'configs', '**', '*.py'),
                             recursive=True) if '_base_' not in p)
    names = {osp.basename(p): p for p in shipped}
    close = difflib.get_close_matches(osp.basename(path), list(names), n=3,
                                      cutoff=0.5)
    if close:
        listed = '\n'.join(
            f'  {osp.relpath(names[name], root)}' for name in close)
        hint = f' The closest shipped configs:\n{listed}'
    else:
        hint = (' No shipped config has a close name (configs/*/ and '
                'configs/*/benchmarks/ hold them).')
    raise ConfigNotFoundError(f'Config file not found: {path}.{hint}')
