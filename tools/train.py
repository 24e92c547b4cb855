"""Train a model from a config (OpenMMLab style).

Examples:
    python tools/train.py configs/pmsn/CONFIG.py
    python tools/train.py CONFIG --work-dir work_dirs/x --resume
    python tools/train.py CONFIG --work-dir work_dirs/x --overwrite
    python tools/train.py CONFIG --max-iters 3   # a smoke run, any loop
    python tools/train.py CONFIG --amp   # bfloat16 (--amp float16: a GPU)
    bash tools/dist_train.sh CONFIG 8

The flags set config keys, as mmpretrain's ``tools/train.py`` does;
everything else a run needs comes from the config and its runner
(``runner_type='PMSNRunner'``, see :mod:`pmsn_mm.engine.runners.pmsn_runner`):
the config checks, the dataloaders fitted to the machine,
and the work-dir guard — a run that does not resume refuses a work dir that
already holds checkpoints (pass --resume or --overwrite; the latter replaces
the old checkpoints only once the new run has written one); ``--resume``
without a path continues from ``last_checkpoint`` resolved inside the work
dir, else from its newest ``iter_N.pth``/``epoch_N.pth``, else starts from
iteration 0 (and says so). Resume and overwrite are decided in
:mod:`pmsn_mm.engine.resume`; ``--resume``/``--overwrite`` only set
``resume``, ``load_from`` and ``overwrite_work_dir``. So mmpretrain's
``tools/train.py`` and ``mim train pmsn_mm`` run a pmsn_mm config the same.
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
from pmsn_mm.engine.launcher import end_distributed, exit_after_distributed_run
from pmsn_mm.engine.optimizers import AMP_CONVERTIBLE, AMP_DTYPES, set_amp
from pmsn_mm.engine.resume import add_resume_arguments, apply_resume_args
from pmsn_mm.utils.refusal import debug_requested, run_command

# its helper beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from cli_overrides import check_config_path, check_option_keys, short_run


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Train a model')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    add_resume_arguments(parser)  # --resume [auto|PATH], --overwrite
    parser.add_argument(
        '--amp',
        nargs='?',
        const=AMP_DTYPES[0],
        choices=AMP_DTYPES,
        help='mixed precision: sets optim_wrapper.type='
        'DeviceAwareAmpOptimWrapper and optim_wrapper.dtype to the given '
        f'dtype (default without a value: {AMP_DTYPES[0]}; bfloat16 autocast '
        'runs without loss scaling, on a GPU or the CPU; float16 runs with '
        'dynamic loss scaling and needs a GPU); works with optim_wrapper.type '
        f'{", ".join(AMP_CONVERTIBLE)}')
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
    ``--max-iters`` and the check of ``--cfg-options`` keys; ``--amp`` sets
    pmsn_mm's wrapper and its dtype, :func:`pmsn_mm.engine.optimizers.
    set_amp`, where mmpretrain's sets mmengine's ``AmpOptimWrapper``);
    everything else is the config's runner's (``PMSNRunner``)."""
    cfg.launcher = args.launcher
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(args.config))[0])
    if args.amp is not None:
        set_amp(cfg, args.amp)
    apply_resume_args(cfg, args.resume, args.overwrite)
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
