"""Train a model from a config (OpenMMLab style).

Examples:
    python tools/train.py configs/pmsn/CONFIG.py
    python tools/train.py CONFIG --work-dir work_dirs/x --resume
    python tools/train.py CONFIG --work-dir work_dirs/x --overwrite
    python tools/train.py CONFIG --max-iters 3   # a smoke run, any loop
    bash tools/dist_train.sh CONFIG 8

The flags set config keys, as mmpretrain's ``tools/train.py`` does;
everything else a run needs comes from the config and its runner
(``runner_type='PMSNRunner'``, see :mod:`pmsn_mm.engine.runners.pmsn_runner`):
the config checks, mixed precision, the dataloaders fitted to the machine,
and the work-dir guard — a run that does not resume refuses a work dir that
already holds checkpoints (pass --resume or --overwrite; the latter replaces
the old checkpoints only once the new run has written one); ``--resume``
without a path continues from ``last_checkpoint`` resolved inside the work
dir, else from its newest ``iter_N.pth``/``epoch_N.pth``, else starts from
iteration 0 (and says so). So mmpretrain's ``tools/train.py`` and ``mim
train pmsn_mm`` run a pmsn_mm config the same.
"""
import argparse
import os
import os.path as osp

from mmengine.config import Config, DictAction
from mmengine.logging import print_log
from mmengine.runner import Runner
from mmpretrain.registry import RUNNERS

import pmsn_mm  # noqa: F401  (registers modules, allow-lists checkpoint types)
from pmsn_mm.config.overrides import (check_config_path, check_option_keys,
                                      short_run)
from pmsn_mm.engine.launcher import end_distributed, exit_after_distributed_run
from pmsn_mm.utils.refusal import debug_requested, run_command

#: Wrappers ``--amp`` turns into mmengine's ``AmpOptimWrapper`` (which
#: ``PMSNRunner`` runs as ``DeviceAwareAmpOptimWrapper``).
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
        'such a run is refused); sets overwrite_work_dir=True')
    parser.add_argument(
        '--amp',
        action='store_true',
        help='automatic mixed precision (mmengine\'s AmpOptimWrapper, which '
        'PMSNRunner runs as DeviceAwareAmpOptimWrapper): bfloat16 autocast '
        'without loss scaling on a GPU with native bfloat16 and on the CPU, '
        'float16 with dynamic loss scaling on other GPUs; '
        'optim_wrapper.dtype=float16 forces float16')
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
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a refusal (by default a refused run '
        'prints its message alone and exits with status 1)')
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args(argv)
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def merge_args(cfg: Config, args: argparse.Namespace) -> Config:
    """Apply the command-line flags to the config (what mmpretrain's
    ``tools/train.py`` does with the same flags, plus ``--overwrite``,
    ``--max-iters`` and the check of ``--cfg-options`` keys); everything
    else is the config's runner's (``PMSNRunner``)."""
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
        if wrapper_type == 'OptimWrapper':  # as mmpretrain's --amp
            cfg.optim_wrapper.type = 'AmpOptimWrapper'
            cfg.optim_wrapper.loss_scale = 'dynamic'
    if args.resume == 'auto':
        cfg.resume = True
        cfg.load_from = None
    elif args.resume is not None:
        cfg.resume = True
        cfg.load_from = args.resume
    if args.overwrite:
        cfg.overwrite_work_dir = True
    if args.no_validate:
        cfg.val_cfg = None
        cfg.val_dataloader = None
        cfg.val_evaluator = None
    if args.auto_scale_lr:
        # (Config.setdefault returns a copy: assign the section back)
        cfg.auto_scale_lr = dict(cfg.get('auto_scale_lr') or {}, enable=True)
    if args.cfg_options is not None:
        check_option_keys(cfg, args.cfg_options)  # e.g. train_dataloder
        cfg.merge_from_dict(args.cfg_options)
    if args.max_iters is not None:
        changed = short_run(cfg, args.max_iters)
        print_log(f'--max-iters {args.max_iters}: {", ".join(changed)}',
                  logger='current')
    return cfg


def main(argv=None) -> Runner:
    """Train; returns the runner (for scripts and tests)."""
    args = parse_args(argv)
    cfg = merge_args(Config.fromfile(check_config_path(args.config)), args)
    if 'runner_type' not in cfg:
        runner = Runner.from_cfg(cfg)
    else:
        runner = RUNNERS.build(cfg)
    runner.train()
    end_distributed()
    return runner


if __name__ == '__main__':
    # a refusal is its message alone on stderr, exit status 1 (--debug:
    # the traceback); see pmsn_mm.utils.refusal
    finished = run_command(main, debug=debug_requested())
    if finished.distributed:  # see exit_after_distributed_run
        exit_after_distributed_run(finished)
