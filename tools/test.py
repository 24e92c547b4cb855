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
import sys
from typing import Tuple

import torch
from mmengine.config import Config, DictAction
from mmengine.model import is_model_wrapper
from mmengine.runner import Runner
from mmengine.runner.checkpoint import CheckpointLoader
from mmpretrain.registry import RUNNERS

import pmsn_mm  # noqa: F401  (registers modules, allow-lists checkpoint types)
from pmsn_mm.config.overrides import check_config_path, check_option_keys
from pmsn_mm.engine.checkpoint_fit import (checkpoint_fit, config_vit_shape,
                                           fitting_benchmarks)
from pmsn_mm.engine.launcher import (end_distributed,
                                     exit_after_distributed_run,
                                     explain_distributed_thread_notes,
                                     setup_cpu_distributed)
from pmsn_mm.engine.loaders import fit_loaders_to_machine
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
        check_option_keys(cfg, args.cfg_options)  # e.g. test_dataloder
        cfg.merge_from_dict(args.cfg_options)
    return cfg


def check_test_loop(cfg: Config, config: str) -> None:
    """Refuse a config that cannot test (a pretraining config), naming the
    benchmark configs whose encoder is the config's."""
    missing = [key for key in ('test_dataloader', 'test_cfg', 'test_evaluator')
               if cfg.get(key) is None]
    if not missing:
        return
    backbone = (cfg.get('model') or {}).get('backbone') or {}
    shape = config_vit_shape(backbone)
    fits = fitting_benchmarks(shape) if shape else []
    which = (f'with this config\'s encoder ({shape}): {", ".join(fits)}'
             if fits else 'e.g. configs/pmsn/benchmarks/'
             'vit-small-p16-lastcls_knn-k20_in1k.py (kNN), '
             '*_logreg_in1k-1pct.py (low-shot logistic regression)')
    raise ValueError(
        f'{config} has no test loop ({", ".join(missing)} not set): it is '
        'a training-only config. To evaluate a pretrained encoder use a '
        f'benchmark config {which}; or train a linear probe (*-linear-*.py) '
        'with tools/train.py and test that.')


def check_checkpoint_covers(model: torch.nn.Module, path: str) -> str:
    """Refuse a checkpoint that does not fit the model (missing or
    mis-shaped weights: the architectures differ, and the error names the
    benchmarks that fit); return one line of what the model takes from it
    and what it leaves (:func:`pmsn_mm.engine.checkpoint_fit.checkpoint_fit`).
    """
    if is_model_wrapper(model):  # distributed: keys without 'module.'
        model = model.module
    ckpt = CheckpointLoader.load_checkpoint(path, map_location='cpu')
    state = ckpt.get('state_dict', ckpt) if isinstance(ckpt, dict) else {}
    state = {k[len('module.'):] if k.startswith('module.') else k: v
             for k, v in state.items()}
    return checkpoint_fit(model, state, path)


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
    cfg = merge_args(Config.fromfile(check_config_path(args.config)), args)
    # misspelled types and keys, one owner per number: before any build
    pmsn_mm.config.check_config(cfg)
    fitted = fit_loaders_to_machine(cfg)  # workers, pin_memory
    check_test_loop(cfg, args.config)
    wrap_frozen_models(cfg, args.launcher)
    explain_distributed_thread_notes(args.launcher)
    setup_cpu_distributed(cfg, args.launcher)
    if 'runner_type' not in cfg:
        runner = Runner.from_cfg(cfg)
    else:
        runner = RUNNERS.build(cfg)
    if fitted:
        runner.logger.info(fitted)
    runner.logger.info(check_checkpoint_covers(runner.model, args.checkpoint))
    with unused_checkpoint_keys_unlisted():  # the line above says it
        metrics = runner.test()
    end_distributed()
    return runner, metrics


def main(argv=None) -> dict:
    """Test; returns the metrics."""
    return run(argv)[1]


if __name__ == '__main__':
    try:
        finished, _ = run()
    except pmsn_mm.config.ConfigCheckError as error:  # the message alone
        sys.exit(f'{type(error).__name__}: {error}')
    if finished.distributed:  # see exit_after_distributed_run
        exit_after_distributed_run(finished)
