"""Extract the encoder of a PMSN/MSN checkpoint as plain backbone weights.

Formats:

- mmpretrain (default): ``{'state_dict': {'backbone.<key>': tensor}, 'meta':
  {...}}``, the layout of any mmpretrain classifier checkpoint. Load it with
  ``init_cfg=dict(type='Pretrained', checkpoint=OUT, prefix='backbone.')``
  (the linear-probe configs do), with ``load_from=OUT``, or, with
  ``--strip-prefix`` (bare keys), straight into a ``VisionTransformer`` /
  ``ResNet`` (``Pretrained`` without prefix, or ``load_state_dict``).
- timm (``--timm``, ViTs only): a plain state dict with timm's
  ``VisionTransformer`` keys, for ``model.load_state_dict(...)`` of e.g.
  ``timm.create_model('vit_small_patch16_224', num_classes=0)``. Python
  lines that build the matching timm ``VisionTransformer`` (features only)
  and load the file are printed; the number of attention heads, which the
  weights do not hold, comes from the training config saved in the
  checkpoint (mmengine's ``meta['cfg']``) or from ``--num-heads``.

The online encoder (``backbone.*``) is extracted by default; ``--target``
takes the EMA target encoder (``target_net.module.0.*``), which is what the
official MSN code evaluates.

Examples:
    python tools/model_converters/pmsn_to_backbone.py CKPT pmsn_backbone.pth
    python tools/model_converters/pmsn_to_backbone.py CKPT target.pth --target
    python tools/model_converters/pmsn_to_backbone.py CKPT vit_timm.pth --timm
"""
import argparse
import os
import os.path as osp
import sys
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Union

import torch

from pmsn_mm.engine.atomic_file_backend import atomic_torch_save
from pmsn_mm.utils.refusal import debug_requested, run_command

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
# the key map shared with the MSN converters (kept importable from here)
from vit_keys import TIMM_RULES  # noqa: F401
from vit_keys import mmpretrain_vit_to_timm

#: Key prefix of the online encoder in PMSN/MSN (and any mmpretrain) models.
ONLINE_PREFIX = 'backbone.'
#: Key prefix of the EMA target backbone: ``target_net`` is mmengine's
#: ``ExponentialMovingAverage`` around ``Sequential(backbone, neck)``.
TARGET_PREFIX = 'target_net.module.0.'


def load_checkpoint(path: str) -> Any:
    """``torch.load`` with ``weights_only=True``, safely allow-listed.

    mmengine training checkpoints carry ``HistoryBuffer`` and numpy objects
    (the message hub); :func:`pmsn_mm.engine.allow_checkpoint_globals`
    allow-lists exactly those before the load, so every read of the file
    (the weights, the saved training config) goes through here.

    Args:
        path: Checkpoint file.

    Returns:
        The loaded object (an mmengine checkpoint dict or a state dict).
    """
    # importing pmsn_mm also registers its modules (MSNViT for the config)
    from pmsn_mm.engine.checkpoint import allow_checkpoint_globals
    allow_checkpoint_globals()
    if not osp.isfile(path):
        raise FileNotFoundError(f'{path}: no such checkpoint file.')
    try:
        return torch.load(path, map_location='cpu', weights_only=True)
    except Exception as err:  # noqa: BLE001  torch raises many kinds
        text = str(err).strip()
        why = (f'{type(err).__name__}: {text.splitlines()[0][:160]}'
               if text and 'Weights only load failed' not in text else
               'not a torch.save file, or it holds Python objects that a '
               'weights_only load refuses')
        raise ValueError(
            f'{path} cannot be read as a PyTorch checkpoint ({why}): a '
            'truncated download, or not a torch file?') from None


def load_state_dict(path: Union[str, Dict]) -> Dict[str, torch.Tensor]:
    """The ``state_dict`` of an mmengine checkpoint (or a bare state dict).

    Args:
        path: Checkpoint file, or a checkpoint already loaded with
            :func:`load_checkpoint`.

    Returns:
        The model state dict.
    """
    ckpt = load_checkpoint(path) if isinstance(path, str) else path
    if not isinstance(ckpt, dict):
        name = path if isinstance(path, str) else 'the checkpoint'
        raise ValueError(f'{name} holds a {type(ckpt).__name__}, not a '
                         'checkpoint dict.')
    return ckpt.get('state_dict', ckpt)


def extract_backbone(state_dict: Dict[str, torch.Tensor],
                     prefix: str) -> 'OrderedDict[str, torch.Tensor]':
    """The entries under ``prefix``, with the prefix removed.

    Args:
        state_dict: A model state dict.
        prefix: E.g. :data:`ONLINE_PREFIX` or :data:`TARGET_PREFIX`.

    Returns:
        The backbone state dict.
    """
    out = OrderedDict((k[len(prefix):], v) for k, v in state_dict.items()
                      if k.startswith(prefix))
    if not out:
        tops = sorted({k.split('.')[0] for k in state_dict})
        raise ValueError(f'No key starts with {prefix!r}; the checkpoint has '
                         f'top-level names {tops}. Is it a PMSN/MSN '
                         'checkpoint (drop --target for models without an EMA '
                         'target)?')
    return out


def checkpoint_num_heads(path: Union[str, Dict]) -> Optional[int]:
    """Attention heads of the ViT backbone in the training config that
    mmengine saved in the checkpoint (``meta['cfg']``), or None (online and
    EMA target encoders share the arch).

    Args:
        path: Checkpoint file, or a checkpoint already loaded with
            :func:`load_checkpoint`.
    """
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    from mmpretrain.registry import MODELS
    ckpt = load_checkpoint(path) if isinstance(path, str) else path
    text = ckpt.get('meta', {}).get('cfg') if isinstance(ckpt, dict) \
        else None
    if not text:
        return None
    backbone = Config.fromstring(text, '.py').model.get('backbone', {})
    arch = backbone.get('arch')
    if isinstance(arch, dict):
        return int(arch['num_heads'])
    init_default_scope('mmpretrain')
    zoo = getattr(MODELS.get(backbone.get('type', '')), 'arch_zoo', {})
    for names, settings in zoo.items():
        if arch in (names if isinstance(names, (list, tuple)) else [names]):
            return int(settings['num_heads'])
    return None


def timm_kwargs(timm_state: Dict[str, torch.Tensor],
                num_heads: Optional[int] = None) -> Dict[str, object]:
    """timm ``VisionTransformer`` arguments readable from the weights.

    Args:
        timm_state: Output of :func:`mmpretrain_vit_to_timm`.
        num_heads: Attention heads (the weights do not hold them); left out
            when None.

    Returns:
        Keyword arguments (``num_classes=0``: features only).
    """
    proj = timm_state['patch_embed.proj.weight']
    embed_dim, patch = proj.shape[0], proj.shape[-1]
    depth = len({k.split('.')[1] for k in timm_state
                 if k.startswith('blocks.')})
    num_patches = timm_state['pos_embed'].shape[1] - 1
    fc1 = timm_state.get('blocks.0.mlp.fc1.weight')
    kwargs = dict(
        img_size=int(round(num_patches**0.5)) * patch,
        patch_size=patch,
        in_chans=proj.shape[1],
        embed_dim=embed_dim,
        depth=depth,
        mlp_ratio=fc1.shape[0] / embed_dim if fc1 is not None else 4.0,
        qkv_bias='blocks.0.attn.qkv.bias' in timm_state,
        final_norm='norm.weight' in timm_state,
        pre_norm='norm_pre.weight' in timm_state,
        num_classes=0)
    if 'blocks.0.ls1.gamma' in timm_state:
        kwargs['init_values'] = 1e-5  # any value: creates LayerScale
    if num_heads is not None:
        if embed_dim % num_heads:
            raise ValueError(f'num_heads={num_heads} does not divide the '
                             f'embedding width {embed_dim}.')
        kwargs['num_heads'] = num_heads
    return kwargs


def timm_loading_code(kwargs: Dict[str, object], path: str) -> str:
    """Python lines that build the timm ViT and load ``path`` into it.

    Args:
        kwargs: Output of :func:`timm_kwargs` (with ``num_heads``).
        path: The written timm state dict.
    """
    args = ', '.join(f'{k}={v!r}' for k, v in kwargs.items())
    return ('import timm, torch\n'
            f'model = timm.models.vision_transformer.VisionTransformer('
            f'{args})\n'
            f'model.load_state_dict(torch.load({osp.abspath(path)!r}))')


def convert(src: str,
            dst: str,
            target: bool = False,
            to_timm: bool = False,
            strip_prefix: bool = False,
            checkpoint: Optional[Dict] = None) -> Dict[str, torch.Tensor]:
    """Write the backbone of ``src`` to ``dst``.

    Args:
        src: PMSN/MSN (or any mmpretrain selfsup) checkpoint.
        dst: Output file.
        target: Take the EMA target encoder instead of the online one.
        to_timm: Write timm ViT keys (a bare state dict).
        strip_prefix: mmpretrain format without the ``backbone.`` prefix.
        checkpoint: ``src`` already loaded with :func:`load_checkpoint`
            (read from ``src`` when None).

    Returns:
        The bare backbone state dict that was written (timm keys with
        ``to_timm``).
    """
    if to_timm and strip_prefix:
        raise ValueError('--strip-prefix applies to the mmpretrain format '
                         'only; timm output has no prefix anyway.')
    if osp.exists(dst) and osp.exists(src) and osp.samefile(src, dst):
        raise ValueError(f'dst {dst} is the checkpoint being converted; '
                         'writing the backbone there would destroy it. '
                         'Choose another output file.')
    prefix = TARGET_PREFIX if target else ONLINE_PREFIX
    backbone = extract_backbone(
        load_state_dict(src if checkpoint is None else checkpoint), prefix)
    if osp.dirname(dst):
        os.makedirs(osp.dirname(dst), exist_ok=True)
    if to_timm:
        backbone = mmpretrain_vit_to_timm(backbone)
        atomic_torch_save(backbone, dst)
        return backbone
    keys = backbone if strip_prefix else OrderedDict(
        (ONLINE_PREFIX + k, v) for k, v in backbone.items())
    meta = dict(
        source=osp.abspath(src),
        encoder='target' if target else 'online',
        source_prefix=prefix)
    atomic_torch_save({'state_dict': keys, 'meta': meta}, dst)
    return backbone


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Extract the backbone of a PMSN/MSN checkpoint '
        '(mmpretrain or timm keys).')
    parser.add_argument('src', help='PMSN/MSN checkpoint')
    parser.add_argument('dst', help='output file')
    parser.add_argument(
        '--target',
        action='store_true',
        help='extract the EMA target encoder (target_net.module.0.*) instead '
        'of the online encoder (backbone.*); official MSN evaluates the '
        'target')
    parser.add_argument(
        '--timm',
        action='store_true',
        help="write timm VisionTransformer keys (ViTs only)")
    parser.add_argument(
        '--num-heads',
        type=int,
        help='attention heads of the ViT, for the printed timm constructor '
        "(default: from the checkpoint's saved training config)")
    parser.add_argument(
        '--strip-prefix',
        action='store_true',
        help="mmpretrain format with bare keys (no 'backbone.'), for "
        'Pretrained init without prefix')
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a refusal (by default its message '
        'alone, exit status 1)')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> Dict[str, torch.Tensor]:
    """Convert as the command line says.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` when None).

    Returns:
        The bare backbone state dict that was written.
    """
    args = parse_args(argv)
    # one safe load for the weights and the saved training config
    checkpoint = load_checkpoint(args.src)
    num_heads = args.num_heads
    if args.timm and num_heads is None:
        num_heads = checkpoint_num_heads(checkpoint)
        if num_heads is None:
            raise ValueError(
                f'--timm needs the number of attention heads, which the '
                f'weights do not hold and {args.src} has no training config '
                "(meta['cfg']) to read it from: pass --num-heads N.")
    state = convert(args.src, args.dst, args.target, args.timm,
                    args.strip_prefix, checkpoint)
    which = 'target' if args.target else 'online'
    print(f'wrote {len(state)} {which}-encoder tensors to {args.dst}')
    if args.timm:
        print('load it with:\n' + timm_loading_code(
            timm_kwargs(state, num_heads), args.dst))
    return state


if __name__ == '__main__':
    # a refusal is its message alone, exit status 1 (--debug: traceback)
    run_command(main, debug=debug_requested())
