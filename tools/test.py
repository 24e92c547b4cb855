"""Evaluate a checkpoint with a config's test loop (OpenMMLab style).

Examples:
    python tools/test.py CONFIG CHECKPOINT
    bash tools/dist_test.sh CONFIG CHECKPOINT 8
"""
import argparse
import os
import os.path as osp

from mmengine.config import Config, DictAction
from mmengine.runner import Runner

import pmsn_mm  # noqa: F401  (registers modules, allow-lists checkpoint types)
from mmpretrain.registry import RUNNERS
from pmsn_mm.utils import end_distributed, setup_cpu_distributed


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Test (evaluate) a model')
    parser.add_argument('config', help='test config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('--work-dir', help='the dir to save logs and results')
    parser.add_argument(
        '--out', help='dump the evaluation results to this pickle/json file')
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


def main(argv=None) -> dict:
    args = parse_args(argv)
    cfg = merge_args(Config.fromfile(args.config), args)
    setup_cpu_distributed(cfg, args.launcher)
    if 'runner_type' not in cfg:
        runner = Runner.from_cfg(cfg)
    else:
        runner = RUNNERS.build(cfg)
    metrics = runner.test()
    end_distributed()
    return metrics


if __name__ == '__main__':
    main()
