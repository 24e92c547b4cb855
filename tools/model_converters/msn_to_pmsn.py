"""Convert an official MSN checkpoint (facebookresearch/msn) to pmsn_mm.

Reads any of the released files (README "Pre-trained models":
``vits16_800ep.pth.tar``, ``vitb16_600ep.pth.tar``, ``vitl16_600ep.pth.tar``,
``vitb4_300ep.pth.tar``, ``vitl7_200ep.pth.tar``), which hold
``target_encoder`` and ``prototypes`` only (facebookresearch/msn issue #7),
or a checkpoint saved by official ``src/msn_train.py`` (``encoder``,
``target_encoder``, ``prototypes``, ``opt``, ``epoch``, ...), with or
without DDP's ``module.``, with or without the projector's BatchNorm, older
files with ``scaling_bias``. The architecture (width, depth, patch size,
image size, projector widths, number of prototypes) is read from the
weights, never from the file name. From a released file, the online and
the target encoder of ``DST`` are both the released target encoder, with
no optimizer state and no epoch (the report says so); ``--online`` is
refused for it (there is no online encoder).

Writes two files:

- ``DST``: a full pmsn_mm PMSN checkpoint (online encoder ``backbone.*`` +
  projector ``neck.*``, prototypes ``head.prototypes``, EMA target
  ``target_net.*``) that ``tools/train.py`` starts from (``load_from``,
  e.g. the ``*_from-msn*`` configs of ``configs/pmsn/``), carrying what the
  official dict holds besides the weights so that
  ``tools/model_converters/pmsn_to_msn.py`` gives the official file back;
- ``--backbone-out`` (default ``DST`` with ``_backbone`` before the
  extension): the target encoder as ``backbone.*`` weights (what official
  MSN's evaluations read), which every probe config of
  ``configs/pmsn/benchmarks/`` loads (``tools/test.py CONFIG FILE``).

A file it does not understand (a DINO or MAE checkpoint, a bare state
dict, a truncated download) is refused with its keys named.

Examples:
    python tools/model_converters/msn_to_pmsn.py vits16_800ep.pth.tar \\
        checkpoints/msn_vits16_800ep_pmsn.pth
    python tools/model_converters/msn_to_pmsn.py vitb4_300ep.pth.tar \\
        msn_vitb4.pth --backbone-out msn_vitb4_online.pth --online
"""
import argparse
import os.path as osp
import sys
from typing import List, Optional

from pmsn_mm.engine.atomic_file_backend import atomic_torch_save
from pmsn_mm.utils.refusal import debug_requested, run_command

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from msn_checkpoints import load_msn_checkpoint, msn_to_pmsn, released_name


def default_backbone_out(dst: str) -> str:
    """``DST`` with ``_backbone`` before its extension.

    Args:
        dst: The PMSN checkpoint's path.

    Returns:
        E.g. ``'msn_backbone.pth'`` for ``'msn.pth'``.
    """
    stem, ext = osp.splitext(dst)
    return f'{stem}_backbone{ext or ".pth"}'


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Convert an official MSN checkpoint into a pmsn_mm PMSN '
        'checkpoint (load_from) and a backbone checkpoint (probe configs).')
    parser.add_argument('src', help='official MSN checkpoint (.pth.tar)')
    parser.add_argument('dst', help='output PMSN checkpoint')
    parser.add_argument(
        '--backbone-out',
        help='output backbone checkpoint (default: DST with _backbone '
        'before the extension)')
    parser.add_argument(
        '--online',
        action='store_true',
        help='the backbone file holds the online encoder instead of the '
        'target encoder (which the official evaluations read); not for a '
        'released file, which holds no online encoder')
    parser.add_argument(
        '--num-heads',
        type=int,
        help='attention heads (default: the official DeiT\'s for the width: '
        '192: 3, 384: 6, 768: 12, 1024: 16, 1280: 16; the weights do not '
        'hold them)')
    parser.add_argument(
        '--no-opt',
        action='store_true',
        help="leave the official optimizer state ('opt', twice the model's "
        'size) out of DST; pmsn_to_msn.py then writes a fresh one')
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
    backbone_out = args.backbone_out or default_backbone_out(args.dst)
    for out in (args.dst, backbone_out):
        if osp.exists(out) and osp.samefile(args.src, out):
            raise ValueError(f'{out} is the file being converted; choose '
                             'another output file.')
    if osp.abspath(args.dst) == osp.abspath(backbone_out):
        raise ValueError(f'--backbone-out {backbone_out} is DST; choose '
                         'another file.')
    checkpoint = load_msn_checkpoint(args.src)
    pmsn, backbone, arch = msn_to_pmsn(
        checkpoint, osp.basename(args.src), num_heads=args.num_heads,
        keep_opt=not args.no_opt, online=args.online)
    atomic_torch_save(pmsn, args.dst)
    atomic_torch_save(backbone, backbone_out)
    epoch = pmsn['msn_official']['fields'].get('epoch')
    released = released_name(args.src)
    layout = ''
    if pmsn['msn_official']['layout'] == 'released':
        layout = (', released layout (target_encoder + prototypes only): '
                  'online and target encoders of DST = the released target '
                  'encoder, no optimizer state, no epoch')
    report = (
        f'{args.src}{f" ({released})" if released else ""}: '
        f'{arch.describe()}'
        f'{f", epoch {epoch}" if epoch is not None else ""}{layout} -> '
        f'{args.dst} '
        f'(PMSN, {len(pmsn["state_dict"])} tensors, load_from) + '
        f'{backbone_out} ({"online" if args.online else "target"} encoder, '
        f'{len(backbone["state_dict"])} tensors, probe configs)')
    print(report)
    return report


if __name__ == '__main__':
    # a refusal is its message alone, exit status 1 (--debug: traceback)
    run_command(main, debug=debug_requested())
