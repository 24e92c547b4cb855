"""Train a model from a config (OpenMMLab style).

Examples:
    python tools/train.py configs/pmsn/CONFIG.py
    python tools/train.py CONFIG --work-dir work_dirs/x --resume
    python tools/train.py CONFIG --work-dir work_dirs/x --overwrite
    python tools/train.py CONFIG --max-iters 3   # a smoke run, any loop
    bash tools/dist_train.sh CONFIG 8

A run that does not resume refuses a work dir that already holds checkpoints
(pass --resume or --overwrite; the latter replaces the old checkpoints only
once the new run has written one); ``--resume`` without a path continues
from ``last_checkpoint`` resolved inside the work dir, else from its newest
``iter_N.pth``/``epoch_N.pth``, else starts from iteration 0 (and says so).
"""
import argparse
import os
import os.path as osp
import sys

from mmengine.config import Config, DictAction
from mmengine.logging import print_log
from mmengine.runner import Runner
from mmpretrain.registry import RUNNERS

import pmsn_mm  # noqa: F401  (registers modules, allow-lists checkpoint types)
from pmsn_mm.config.overrides import (check_config_path, check_option_keys,
                                      short_run)
from pmsn_mm.datasets.non_empty import check_has_batches
from pmsn_mm.engine.hooks import FinalValMetricsHook, WorkDirOverwriteHook
from pmsn_mm.engine.launcher import (end_distributed,
                                     exit_after_distributed_run,
                                     explain_distributed_thread_notes,
                                     setup_cpu_distributed)
from pmsn_mm.engine.loaders import fit_loaders_to_machine
from pmsn_mm.engine.optimizers import amp_device_available
from pmsn_mm.engine.work_dir import prepare_work_dir
from pmsn_mm.utils.upstream_notes import MMEngineFileClientNotes

#: Wrappers ``--amp`` replaces with ``DeviceAwareAmpOptimWrapper``.
AMP_CAPABLE = ('OptimWrapper', 'AmpOptimWrapper',
               'DeviceAwareAmpOptimWrapper')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Train a model')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument(
        '--resume',
        nargs='?',
        type=str,
        const='auto',
        help='resume from the given checkpoint; without a path, resume from '
        'the latest checkpoint in the work dir (or start from iteration 0 if '
        'there is none)')
    parser.add_argument(
        '--overwrite',
        action='store_true',
        help='start from iteration 0 in a work dir that holds checkpoints of '
        'an earlier run, replacing them: they are moved aside once the model, '
        'data and optimizer are built, deleted when this run writes its '
        'first checkpoint and put back if it fails before (without this flag '
        'such a run is refused)')
    parser.add_argument(
        '--amp',
        action='store_true',
        help='automatic mixed precision (DeviceAwareAmpOptimWrapper): '
        'bfloat16 autocast without loss scaling on a GPU with native '
        'bfloat16 and on the CPU, float16 with dynamic loss scaling on '
        'other GPUs; optim_wrapper.dtype=float16 forces float16')
    parser.add_argument(
        '--no-validate',
        action='store_true',
        help='do not evaluate checkpoints during training')
    parser.add_argument(
        '--auto-scale-lr',
        action='store_true',
        help='scale the lr by the actual total batch size')
    parser.add_argument(
        '--max-iters',
        type=int,
        help='a short run: train N iterations, validate once (if the config '
        'validates) and save a checkpoint, for iteration- and epoch-based '
        'configs alike (epoch-based: one epoch of N batches)')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override config settings, e.g. train_dataloader.batch_size=16 '
        '(a key of a section the config lacks and the runner does not read '
        'is refused)')
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
        help='job launcher')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args(argv)
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
    if args.amp:
        wrapper_type = cfg.optim_wrapper.get('type', 'OptimWrapper')
        if wrapper_type not in AMP_CAPABLE:
            raise ValueError(f'--amp works with OptimWrapper, not the '
                             f'configured {wrapper_type}.')
        # mmengine's AmpOptimWrapper on a GPU, bf16 autocast on the CPU
        cfg.optim_wrapper.type = 'DeviceAwareAmpOptimWrapper'
        cfg.optim_wrapper.setdefault('loss_scale', 'dynamic')
    if args.resume == 'auto':
        cfg.resume = True
        cfg.load_from = None
    elif args.resume is not None:
        cfg.resume = True
        cfg.load_from = args.resume
    if args.no_validate:
        cfg.val_cfg = None
        cfg.val_dataloader = None
        cfg.val_evaluator = None
    if args.auto_scale_lr:
        enable_auto_scale_lr(cfg, args.config)
    if args.cfg_options is not None:
        check_option_keys(cfg, args.cfg_options)  # e.g. train_dataloder
        cfg.merge_from_dict(args.cfg_options)
    if args.max_iters is not None:
        changed = short_run(cfg, args.max_iters)
        print_log(f'--max-iters {args.max_iters}: {", ".join(changed)}',
                  logger='current')
    cpu_amp_fallback(cfg)
    return cfg


def cpu_amp_fallback(cfg: Config) -> None:
    """Without an accelerator, mmengine's ``AmpOptimWrapper`` (which then
    refuses to build) becomes ``DeviceAwareAmpOptimWrapper``: bfloat16
    autocast on the CPU, without loss scaling; logged.

    Args:
        cfg: The merged config, changed in place.
    """
    wrapper = cfg.get('optim_wrapper') or {}
    if wrapper.get('type') != 'AmpOptimWrapper' or amp_device_available():
        return
    wrapper['type'] = 'DeviceAwareAmpOptimWrapper'
    print_log(
        'No CUDA device: optim_wrapper AmpOptimWrapper runs as '
        'DeviceAwareAmpOptimWrapper (bfloat16 autocast on the CPU).',
        logger='current')


def enable_auto_scale_lr(cfg: Config, config: str) -> None:
    """Switch on mmengine's linear lr scaling (``lr * total batch /
    base_batch_size``); a config without a base batch size is refused.

    Args:
        cfg: The config.
        config: Its path, for the message.
    """
    base = (cfg.get('auto_scale_lr') or {}).get('base_batch_size')
    if not isinstance(base, int) or isinstance(base, bool) or base < 1:
        raise ValueError(
            f'--auto-scale-lr: {config} sets no auto_scale_lr.base_batch_size'
            f' (got auto_scale_lr={cfg.get("auto_scale_lr")!r}), the total '
            'batch size its lr was chosen for. Add auto_scale_lr = dict('
            'base_batch_size=N) to the config, or drop --auto-scale-lr.')
    cfg.auto_scale_lr.enable = True


def main(argv=None) -> Runner:
    """Train; returns the runner (for scripts and tests)."""
    args = parse_args(argv)
    cfg = merge_args(Config.fromfile(check_config_path(args.config)), args)
    # misspelled types and keys, one owner per number: before any build
    pmsn_mm.config.check_config(cfg)
    fitted = fit_loaders_to_machine(cfg)  # workers, pin_memory
    plan = prepare_work_dir(cfg, args.overwrite)
    # moves the earlier run's files only once everything is built
    overwrite = WorkDirOverwriteHook(cfg.work_dir, plan)
    explain_distributed_thread_notes(args.launcher)
    setup_cpu_distributed(cfg, args.launcher)
    try:
        if 'runner_type' not in cfg:
            runner = Runner.from_cfg(cfg)
        else:
            runner = RUNNERS.build(cfg)
        runner.logger.addFilter(MMEngineFileClientNotes())
        for note in plan.notes + [fitted] * bool(fitted):
            runner.logger.info(note)
        runner.register_hook(FinalValMetricsHook())  # the log's last line
        runner.register_hook(overwrite)
        check_has_batches(runner.train_dataloader)  # before the schedulers
        runner.train()
    except BaseException:
        overwrite.restore()
        raise
    end_distributed()
    return runner


if __name__ == '__main__':
    try:
        finished = main()
    except pmsn_mm.config.ConfigCheckError as error:  # the message alone
        sys.exit(f'{type(error).__name__}: {error}')
    if finished.distributed:  # see exit_after_distributed_run
        exit_after_distributed_run(finished)
