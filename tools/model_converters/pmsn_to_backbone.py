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
  ``timm.create_model('vit_small_patch16_224', num_classes=0)``. The
  matching timm constructor arguments are printed.

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
import re
from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

import torch

#: Key prefix of the online encoder in PMSN/MSN (and any mmpretrain) models.
ONLINE_PREFIX = 'backbone.'
#: Key prefix of the EMA target backbone: ``target_net`` is mmengine's
#: ``ExponentialMovingAverage`` around ``Sequential(backbone, neck)``.
TARGET_PREFIX = 'target_net.module.0.'

#: mmpretrain ``VisionTransformer`` -> timm ``VisionTransformer`` key rules
#: (mmpretrain/models/backbones/vision_transformer.py,
#: timm/models/vision_transformer.py).
TIMM_RULES: Tuple[Tuple[str, str], ...] = (
    (r'^(cls_token|pos_embed)$', r'\1'),
    (r'^patch_embed\.projection\.(weight|bias)$', r'patch_embed.proj.\1'),
    (r'^pre_norm\.(weight|bias)$', r'norm_pre.\1'),
    (r'^layers\.(\d+)\.ln1\.(weight|bias)$', r'blocks.\1.norm1.\2'),
    (r'^layers\.(\d+)\.attn\.qkv\.(weight|bias)$', r'blocks.\1.attn.qkv.\2'),
    (r'^layers\.(\d+)\.attn\.proj\.(weight|bias)$', r'blocks.\1.attn.proj.\2'),
    (r'^layers\.(\d+)\.attn\.gamma1\.weight$', r'blocks.\1.ls1.gamma'),
    (r'^layers\.(\d+)\.ln2\.(weight|bias)$', r'blocks.\1.norm2.\2'),
    (r'^layers\.(\d+)\.ffn\.layers\.0\.0\.(weight|bias)$',
     r'blocks.\1.mlp.fc1.\2'),
    (r'^layers\.(\d+)\.ffn\.layers\.1\.(weight|bias)$',
     r'blocks.\1.mlp.fc2.\2'),
    (r'^layers\.(\d+)\.ffn\.gamma2\.weight$', r'blocks.\1.ls2.gamma'),
    (r'^ln1\.(weight|bias)$', r'norm.\1'),
)


def load_state_dict(path: str) -> Dict[str, torch.Tensor]:
    """The ``state_dict`` of an mmengine checkpoint (or a bare state dict).

    Args:
        path: Checkpoint file.

    Returns:
        The model state dict.
    """
    import pmsn_mm  # noqa: F401  (allow-lists mmengine checkpoint types)
    ckpt = torch.load(path, map_location='cpu', weights_only=True)
    if not isinstance(ckpt, dict):
        raise ValueError(f'{path} holds a {type(ckpt).__name__}, not a '
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


def mmpretrain_vit_to_timm(
        state_dict: Dict[str, torch.Tensor]
) -> 'OrderedDict[str, torch.Tensor]':
    """Rename mmpretrain ``VisionTransformer`` keys to timm's.

    Args:
        state_dict: Bare mmpretrain ViT state dict (no ``backbone.``).

    Returns:
        State dict with timm ``VisionTransformer`` keys, same tensors.
    """
    out, unknown = OrderedDict(), []
    for key, value in state_dict.items():
        for pattern, repl in TIMM_RULES:
            if re.match(pattern, key):
                out[re.sub(pattern, repl, key)] = value
                break
        else:
            unknown.append(key)
    if unknown:
        raise ValueError(
            'timm export supports mmpretrain VisionTransformer weights '
            "(out_type='cls_token'); these keys have no timm name: "
            f'{unknown[:8]}{" ..." if len(unknown) > 8 else ""}')
    return out


def timm_kwargs(timm_state: Dict[str, torch.Tensor]) -> Dict[str, object]:
    """timm ``VisionTransformer`` arguments readable from the weights.

    ``num_heads`` is not stored in the weights and must be added.

    Args:
        timm_state: Output of :func:`mmpretrain_vit_to_timm`.

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
        embed_dim=embed_dim,
        depth=depth,
        mlp_ratio=fc1.shape[0] / embed_dim if fc1 is not None else 4.0,
        qkv_bias='blocks.0.attn.qkv.bias' in timm_state,
        final_norm='norm.weight' in timm_state,
        pre_norm='norm_pre.weight' in timm_state,
        num_classes=0)
    if 'blocks.0.ls1.gamma' in timm_state:
        kwargs['init_values'] = 1e-5  # any value: creates LayerScale
    return kwargs


def convert(src: str,
            dst: str,
            target: bool = False,
            to_timm: bool = False,
            strip_prefix: bool = False) -> Dict[str, torch.Tensor]:
    """Write the backbone of ``src`` to ``dst``.

    Args:
        src: PMSN/MSN (or any mmpretrain selfsup) checkpoint.
        dst: Output file.
        target: Take the EMA target encoder instead of the online one.
        to_timm: Write timm ViT keys (a bare state dict).
        strip_prefix: mmpretrain format without the ``backbone.`` prefix.

    Returns:
        The bare backbone state dict that was written (timm keys with
        ``to_timm``).
    """
    if to_timm and strip_prefix:
        raise ValueError('--strip-prefix applies to the mmpretrain format '
                         'only; timm output has no prefix anyway.')
    prefix = TARGET_PREFIX if target else ONLINE_PREFIX
    backbone = extract_backbone(load_state_dict(src), prefix)
    if osp.dirname(dst):
        os.makedirs(osp.dirname(dst), exist_ok=True)
    if to_timm:
        backbone = mmpretrain_vit_to_timm(backbone)
        torch.save(backbone, dst)
        return backbone
    keys = backbone if strip_prefix else OrderedDict(
        (ONLINE_PREFIX + k, v) for k, v in backbone.items())
    meta = dict(
        source=osp.abspath(src),
        encoder='target' if target else 'online',
        source_prefix=prefix)
    torch.save({'state_dict': keys, 'meta': meta}, dst)
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
        '--strip-prefix',
        action='store_true',
        help="mmpretrain format with bare keys (no 'backbone.'), for "
        'Pretrained init without prefix')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> Dict[str, torch.Tensor]:
    args = parse_args(argv)
    state = convert(args.src, args.dst, args.target, args.timm,
                    args.strip_prefix)
    which = 'target' if args.target else 'online'
    print(f'wrote {len(state)} {which}-encoder tensors to {args.dst}')
    if args.timm:
        kwargs = ', '.join(f'{k}={v!r}' for k, v in timm_kwargs(state).items())
        print('load with: timm.models.vision_transformer.VisionTransformer('
              f'{kwargs}, num_heads=<H>).load_state_dict(torch.load(DST))')
    return state


if __name__ == '__main__':
    main()
