"""Evaluate a checkpoint with a config's test loop (OpenMMLab style).

Examples:
    python tools/test.py CONFIG CHECKPOINT
    bash tools/dist_test.sh CONFIG CHECKPOINT 8
    # kNN / low-shot logistic regression of a pretrained encoder
    python tools/test.py \
        configs/pmsn/benchmarks/vit-small-p16-lastcls_knn-k20_in1k.py CKPT

CONFIG must have a test loop: a trained linear probe's config, or a
frozen-feature benchmark (``configs/pmsn/benchmarks/*_knn-*``,
``*_logreg_*``); a pretraining config has none. Every weight of the model
must be in CHECKPOINT (a missing one would be evaluated at its random
initialisation, so it is refused).
"""
import argparse
import os
import os.path as osp
from collections import Counter
from typing import Tuple

import torch
from mmengine.config import Config, DictAction
from mmengine.model import is_model_wrapper
from mmengine.runner import Runner
from mmengine.runner.checkpoint import CheckpointLoader
from mmpretrain.registry import RUNNERS

import pmsn_mm  # noqa: F401  (registers modules, allow-lists checkpoint types)
from pmsn_mm.engine.launcher import (end_distributed,
                                     exit_after_distributed_run,
                                     setup_cpu_distributed)
from pmsn_mm.utils.upstream_notes import unused_checkpoint_keys_unlisted

#: What ``--out`` writes: mmengine's ``DumpResults`` pickles the per-sample
#: outputs, and accepts only these suffixes.
OUT_SUFFIXES = ('.pkl', '.pickle')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Test (evaluate) a model')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('--work-dir', help='the dir to save logs and results')
    parser.add_argument(
        '--out',
        help='also pickle the per-sample outputs of the test loop (predicted '
        'scores, or frozen features) to this .pkl/.pickle file '
        "(mmengine's DumpResults); the metrics are in the log and the work "
        "dir's JSON either way")
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override config settings, e.g. test_dataloader.batch_size=8')
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
        help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args(argv)
    if args.out is not None and not args.out.endswith(OUT_SUFFIXES):
        parser.error(f'--out must name a {" or ".join(OUT_SUFFIXES)} file '
                     f"(mmengine's DumpResults pickles the per-sample "
                     f'outputs), got {args.out!r}.')
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def merge_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the command-line flags to the config."""
    cfg.launcher = args.launcher
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(args.config))[0])
    cfg.load_from = args.checkpoint
    if args.out is not None:
        cfg.test_evaluator = [
            *(cfg.test_evaluator if isinstance(cfg.test_evaluator, list) else
              [cfg.test_evaluator]),
            dict(type='DumpResults', out_file_path=args.out)
        ]
    if args.cfg_options is not None:
        cfg.merge_from_dict(args.cfg_options)
    return cfg


def check_test_loop(cfg: Config, config: str) -> None:
    """Refuse a config that cannot test (a pretraining config)."""
    missing = [key for key in ('test_dataloader', 'test_cfg', 'test_evaluator')
               if cfg.get(key) is None]
    if missing:
        raise ValueError(
            f'{config} has no test loop ({", ".join(missing)} not set): it is '
            'a training-only config. To evaluate a pretrained encoder use a '
            'benchmark config, e.g. configs/pmsn/benchmarks/'
            'vit-small-p16-lastcls_knn-k20_in1k.py (kNN), '
            '*_logreg_in1k-1pct.py (low-shot logistic regression), or train a '
            'linear probe (*-linear-*.py) with tools/train.py and test that.')


def check_checkpoint_covers(model: torch.nn.Module, path: str) -> str:
    """Refuse a checkpoint that lacks some of the model's weights; return
    one line saying what the model takes from it and what it leaves.

    mmengine loads ``load_from`` non-strictly; a checkpoint of another
    architecture (or without the ``backbone.`` prefix) would leave weights at
    their initialisation and be evaluated silently. A pretraining checkpoint
    evaluated by a benchmark (kNN, linear probe) has more than the model
    needs (the EMA target, projector, prototypes): that is expected and
    summarised per top-level name instead of mmengine's list of every key.
    """
    if is_model_wrapper(model):  # distributed: keys without 'module.'
        model = model.module
    ckpt = CheckpointLoader.load_checkpoint(path, map_location='cpu')
    state = ckpt.get('state_dict', ckpt) if isinstance(ckpt, dict) else {}
    keys = {k[len('module.'):] if k.startswith('module.') else k
            for k in state}
    wanted = model.state_dict()
    missing = [k for k in wanted if k not in keys]
    if missing:
        tops = sorted({k.split('.')[0] for k in keys})
        raise ValueError(
            f'{path} lacks {len(missing)} of the model\'s '
            f'{len(wanted)} weights (e.g. {missing[:4]}); it has '
            f'top-level names {tops}. For a PMSN/MSN encoder, pass the '
            'pretraining checkpoint (backbone.* = online encoder) or the '
            'output of tools/model_converters/pmsn_to_backbone.py (--target '
            'for the EMA target).')

    def by_top(names) -> str:
        counts = Counter(k.split('.')[0] for k in names)
        return ', '.join(f'{top}.*: {n}' for top, n in sorted(counts.items()))

    unused = sorted(keys - set(wanted))
    left = (f'; left {len(unused)} this model does not use ({by_top(unused)})'
            if unused else '')
    return (f'{path}: the model takes all {len(wanted)} of its weights '
            f'({by_top(wanted)}){left}.')


def wrap_frozen_models(cfg: Config, launcher: str) -> None:
    """Distributed testing wraps the model in
    ``DeviceAwareDistributedDataParallel`` (mmengine's DDP wrapper on CUDA,
    gloo DDP on CPU), which also takes a model without trainable
    parameters: torch's DDP refuses the frozen encoder of the kNN and
    logistic-regression benchmarks. A config's own ``model_wrapper_cfg`` is
    kept.

    Args:
        cfg: The merged config; updated in place.
        launcher: The ``--launcher`` value.
    """
    if launcher != 'none' and not cfg.get('model_wrapper_cfg'):
        cfg.model_wrapper_cfg = dict(
            type='DeviceAwareDistributedDataParallel',
            broadcast_buffers=False)


def run(argv=None) -> Tuple[Runner, dict]:
    """Test; returns the runner and the metrics."""
    args = parse_args(argv)
    cfg = merge_args(Config.fromfile(args.config), args)
    pmsn_mm.config.check_config_types(cfg)  # refuse misspelled types
    pmsn_mm.config.check_config_values(cfg)  # one owner per number
    check_test_loop(cfg, args.config)
    wrap_frozen_models(cfg, args.launcher)
    setup_cpu_distributed(cfg, args.launcher)
    if 'runner_type' not in cfg:
        runner = Runner.from_cfg(cfg)
    else:
        runner = RUNNERS.build(cfg)
    runner.logger.info(check_checkpoint_covers(runner.model, args.checkpoint))
    with unused_checkpoint_keys_unlisted():  # the line above says it
        metrics = runner.test()
    end_distributed()
    return runner, metrics


def main(argv=None) -> dict:
    """Test; returns the metrics."""
    return run(argv)[1]


if __name__ == '__main__':
    finished, _ = run()
    if finished.distributed:  # see exit_after_distributed_run
        exit_after_distributed_run(finished)
