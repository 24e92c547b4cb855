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
initialisation, so it is refused). Both checks, and the rest of what a run
needs, are the config's runner's (``PMSNRunner``); the flags set config
keys, as mmpretrain's ``tools/test.py`` does.
"""
import argparse
import os
import os.path as osp
import sys
from typing import Tuple

from mmengine.config import Config, DictAction
from mmengine.runner import Runner
from mmpretrain.registry import RUNNERS

import pmsn_mm  # noqa: F401  (registers modules, allow-lists checkpoint types)
from pmsn_mm.engine.launcher import end_distributed, exit_after_distributed_run
from pmsn_mm.utils.refusal import debug_requested, run_command

# its helper beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from cli_overrides import check_config_path, check_option_keys

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
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a refusal (by default a refused run '
        'prints its message alone and exits with status 1)')
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


def run(argv=None) -> Tuple[Runner, dict]:
    """Test; returns the runner and the metrics."""
    args = parse_args(argv)
    cfg = merge_args(Config.fromfile(check_config_path(args.config)), args)
    if 'runner_type' not in cfg:
        runner = Runner.from_cfg(cfg)
    else:
        runner = RUNNERS.build(cfg)
    metrics = runner.test()
    end_distributed()
    return runner, metrics


def main(argv=None) -> dict:
    """Test; returns the metrics."""
    return run(argv)[1]


if __name__ == '__main__':
    # a refusal is its message alone on stderr, exit status 1 (--debug:
    # the traceback); see pmsn_mm.utils.refusal
    finished, _ = run_command(run, debug=debug_requested())
    if finished.distributed:  # see exit_after_distributed_run
        exit_after_distributed_run(finished)
