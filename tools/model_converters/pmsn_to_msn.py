"""Convert a pmsn_mm PMSN checkpoint to the official MSN format.

The output is the dict official ``src/msn_train.py`` saves (``encoder``,
``opt``, ``prototypes``, ``target_encoder``, ``epoch``, ``loss``,
``batch_size``, ``world_size``, ``lr``, ``temperature``; encoder keys with
DDP's ``module.`` and MSN's projector as ``fc.*``), so that official MSN's
``load_checkpoint`` resumes from it and ``linear_eval.py`` /
``logistic_eval.py`` (``load_pretrained``: ``target_encoder``) evaluate it.

The input is a pretraining checkpoint of a ``configs/pmsn`` ViT config
(``MSNViT`` backbone, ``MSNProjector`` neck, ``PMSNHead``) or a file
written by ``msn_to_pmsn.py``; for the latter the official file comes back
tensor for tensor (the scalars, the ``scaling_bias`` of older files and, if
it was kept, the optimizer state too), in its layout: a file converted from
a released download (``target_encoder`` + ``prototypes`` only) gives that
layout back. Other checkpoints get a fresh AdamW
state with the official parameter groups, their epoch, and the batch size,
lr and temperature of the training config mmengine saved in them.

Examples:
    python tools/model_converters/pmsn_to_msn.py \\
        work_dirs/RUN/epoch_300.pth pmsn_vits16_msn-format.pth.tar
    python logistic_eval.py --pretrained . \\
        --fname pmsn_vits16_msn-format.pth.tar --model-name deit_small ...
"""
import argparse
import os.path as osp
import sys
from typing import Dict, List, Optional

import torch

from pmsn_mm.engine.atomic_file_backend import atomic_torch_save
from pmsn_mm.utils.refusal import debug_requested, run_command

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from msn_checkpoints import pmsn_to_msn, read_msn_checkpoint


def load_pmsn_checkpoint(path: str) -> Dict:
    """Load an mmengine checkpoint on the CPU (weights only, with the
    project's allow-list).

    Args:
        path: The file.

    Returns:
        The loaded dict.

    Raises:
        ValueError: When torch cannot read it, with torch's reason.
    """
    import pmsn_mm  # noqa: F401  the safe globals of mmengine checkpoints
    try:
        return torch.load(path, map_location='cpu', weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as err:  # noqa: BLE001  torch raises many kinds
        raise ValueError(
            f'{path} cannot be read as a PyTorch checkpoint '
            f'({type(err).__name__}: {str(err).splitlines()[0][:200]}): a '
            'truncated file, or not a torch file?') from None


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Convert a pmsn_mm PMSN checkpoint to the official MSN '
        'checkpoint format.')
    parser.add_argument('src', help='pmsn_mm PMSN checkpoint')
    parser.add_argument('dst', help='output official MSN checkpoint')
    prefix = parser.add_mutually_exclusive_group()
    prefix.add_argument(
        '--module-prefix',
        dest='module_prefix',
        action='store_const',
        const=True,
        help="prefix the encoders' keys with DDP's module. (the released "
        'files do; default: as the file msn_to_pmsn.py read, else yes)')
    prefix.add_argument(
        '--no-module-prefix',
        dest='module_prefix',
        action='store_const',
        const=False,
        help='bare encoder keys (a single-GPU official run)')
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a refusal (by default its message '
        'alone, exit status 1)')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> str:
    """Convert as the command line says.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` when None).

    Returns:
        The one-line report that was printed.
    """
    args = parse_args(argv)
    if osp.exists(args.dst) and osp.samefile(args.src, args.dst):
        raise ValueError(f'{args.dst} is the file being converted; choose '
                         'another output file.')
    official = pmsn_to_msn(load_pmsn_checkpoint(args.src), args.src,
                           module_prefix=args.module_prefix)
    # the same checks as a file read by msn_to_pmsn.py: what is written is
    # an official checkpoint this project can read back
    arch = read_msn_checkpoint(official, args.dst).arch
    atomic_torch_save(official, args.dst)
    tensors = len(official.get('encoder', ())) + len(
        official['target_encoder']) + 1
    epoch = official.get('epoch')
    prefixed = next(iter(official['target_encoder'])).startswith('module.')
    layout = ('released layout: target_encoder + prototypes only'
              if 'encoder' not in official else 'training layout')
    report = (f'{args.src}: {arch.describe()}'
              f'{f", epoch {epoch}" if epoch is not None else ""} -> '
              f'{args.dst} (official MSN format, {layout}, {tensors} '
              f'tensors, encoder keys {"with" if prefixed else "without"} '
              'module.; logistic_eval.py / linear_eval.py read '
              'target_encoder)')
    print(report)
    return report


if __name__ == '__main__':
    # a refusal is its message alone, exit status 1 (--debug: traceback)
    run_command(main, debug=debug_requested())
