"""Linear probe on cached frozen features: the fast mode of the probe configs.

With a frozen backbone whose features do not depend on training mode, and a
training pipeline without random augmentation, every epoch of
``tools/train.py CONFIG`` feeds the probes the very same features. This tool
computes them once (backbone + neck, with a progress bar), then trains the
probes on the cached features with the config's own optimiser, parameter
schedulers, epochs, sampler (same seed, so same batch order) and evaluator,
through ``PMSNRunner``. Up to floating-point summation order the trained
probes and accuracies are those of the online run. It finally measures a
few real online iterations and prints the speed-up. The work is
``run_cached_probe`` of ``tools/cached_probe.py`` (beside it); this script only
reads the arguments. ``--resume`` and ``--overwrite`` are those of
``tools/train.py`` (:mod:`pmsn_mm.engine.resume` decides, before any
feature is extracted): a work dir that holds checkpoints is refused
without one of them.

The probe configs follow VISSL (paper App. E.2) and augment the training
images (random crops, flips), which this mode cannot reproduce: it refuses
them, unless ``--use-test-pipeline`` trains on the deterministic test-time
pipeline instead (a faster, un-augmented variant of the protocol).

Writes ``WORK_DIR/probe_cached.pth`` (backbone + neck + trained probes),
which ``tools/test.py CONFIG WORK_DIR/probe_cached.pth`` evaluates. Runs in
one process (one GPU, or the CPU); features are kept in host memory
(N x D float32: 1.28M x 1536 for ImageNet concat-4-CLS ViT-S is 7.9 GB).

Examples:
    python tools/linear_probe_cached.py CONFIG CHECKPOINT
    python tools/linear_probe_cached.py CONFIG CHECKPOINT --use-test-pipeline
    python tools/linear_probe_cached.py CONFIG CHECKPOINT --work-dir D --resume
"""
import argparse
import os.path as osp
import sys
from typing import Dict, List, Optional

from mmengine.config import Config, DictAction

import pmsn_mm  # noqa: F401  (registers modules, allow-lists checkpoint types)
from pmsn_mm.engine.resume import add_resume_arguments, apply_resume_args
from pmsn_mm.utils.refusal import debug_requested, run_command

# its helper beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from cached_probe import run_cached_probe


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Train the linear probes of a config on cached frozen '
        'features (fast mode; deterministic train pipelines only).')
    parser.add_argument('config', help='linear-probe config')
    parser.add_argument(
        'checkpoint',
        help="encoder checkpoint for every Pretrained init_cfg ('none': "
        "keep the config's)")
    parser.add_argument('--work-dir', help='output folder')
    add_resume_arguments(parser)  # --resume [auto|PATH], --overwrite
    parser.add_argument(
        '--use-test-pipeline',
        action='store_true',
        help='train on the test-time pipeline (drops train augmentation)')
    parser.add_argument(
        '--batch-size', type=int, help='feature-extraction batch size')
    parser.add_argument(
        '--online-iters',
        type=int,
        default=5,
        help='online iterations to time for the speed-up (0: estimate)')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override config settings, e.g. train_cfg.max_epochs=10')
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a refusal (by default a refused run '
        'prints its message alone and exits with status 1)')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> Dict[str, object]:
    args = parse_args(argv)
    if args.online_iters < 0:
        raise ValueError(
            f'--online-iters must be >= 0 but is {args.online_iters}.')
    cfg = Config.fromfile(args.config)
    apply_resume_args(cfg, args.resume, args.overwrite)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    # misspelled types and keys, one owner per number
    pmsn_mm.config.check_config(cfg)
    work_dir = args.work_dir or osp.join(
        'work_dirs',
        osp.splitext(osp.basename(args.config))[0] + '_cached')
    return run_cached_probe(cfg, args.checkpoint, work_dir,
                            args.use_test_pipeline, args.batch_size,
                            args.online_iters)


if __name__ == '__main__':
    # a refusal is its message alone, exit status 1 (a finished run: 0)
    run_command(main, debug=debug_requested())
