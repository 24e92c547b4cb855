"""Does a checkpoint fit a model? One line saying what it takes and leaves,
or an error that says how the architectures differ and which shipped
benchmark configs fit (mmengine loads ``load_from`` non-strictly, silently
evaluating weights left at their initialisation).
"""
import glob
import os.path as osp
import re
from collections import Counter
from typing import Dict, List, Mapping, NamedTuple, Optional

import torch

#: The ViT backbones of the benchmark configs (mmpretrain's and pmsn_mm's).
VIT_TYPES = ('VisionTransformer', 'MSNViT', 'MAEViT', 'Data2VecViT',
             'BEiTViT')


class ViTShape(NamedTuple):
    """What a ViT encoder's weights fix."""
    width: int
    depth: int
    patch: int
    channels: int

    def __str__(self) -> str:
        return (f'ViT of width {self.width}, depth {self.depth}, patch '
                f'{self.patch}, {self.channels} input channel'
                f'{"s" if self.channels != 1 else ""}')


def vit_shape(state: Mapping[str, torch.Tensor],
              prefix: str = 'backbone.') -> Optional[ViTShape]:
    """The ViT architecture of the weights under ``prefix``, or None if
    they are not a ViT's (no patch embedding).

    Args:
        state: A state dict.
        prefix: Where the encoder's weights are.
    """
    patch = state.get(f'{prefix}patch_embed.projection.weight')
    if patch is None or patch.dim() != 4:
        return None
    layers = {int(m.group(1)) for k in state
              for m in [re.match(re.escape(prefix) + r'layers\.(\d+)\.', k)]
              if m}
    return ViTShape(width=int(patch.shape[0]), depth=len(layers),
                    patch=int(patch.shape[2]), channels=int(patch.shape[1]))


def config_vit_shape(backbone: Mapping) -> Optional[ViTShape]:
    """The architecture a ViT backbone config builds (its ``arch`` name or
    dict), or None for other backbones."""
    kind = str(backbone.get('type', '')).split('.')[-1]
    if kind not in VIT_TYPES:
        return None
    arch = backbone.get('arch', 'base')
    if isinstance(arch, str):
        from mmpretrain.models import VisionTransformer
        zoo = {name: settings
               for names, settings in VisionTransformer.arch_zoo.items()
               for name in (names if isinstance(names, (list, tuple)) else
                            [names])}
        if arch not in zoo:
            return None
        arch = zoo[arch]
    return ViTShape(width=int(arch['embed_dims']),
                    depth=int(arch['num_layers']),
                    patch=int(backbone.get('patch_size', 16)),
                    channels=int(backbone.get('in_channels', 3)))


def fitting_benchmarks(shape: ViTShape,
                       root: Optional[str] = None) -> List[str]:
    """Shipped benchmark configs (``configs/*/benchmarks/*.py``) whose
    encoder has ``shape``, relative to ``root``.

    Args:
        shape: The checkpoint's ViT architecture.
        root: The folder holding ``configs/`` (None: the checkout's or the
            installed package's, as the model index finds it).
    """
    from mmengine.config import Config

    from ..utils.model_index import model_index_root
    root = root or model_index_root()
    if root is None:
        return []
    found = []
    for path in sorted(glob.glob(osp.join(root, 'configs', '*', 'benchmarks',
                                          '*.py'))):
        try:
            backbone = Config.fromfile(path).model.backbone
        except Exception:  # noqa: BLE001  a config of another package
            continue
        if config_vit_shape(backbone) == shape:
            found.append(osp.relpath(path, root))
    return found


def _by_top(names) -> str:
    counts = Counter(k.split('.')[0] for k in names)
    return ', '.join(f'{top}.*: {n}' for top, n in sorted(counts.items()))


def checkpoint_fit(model: torch.nn.Module, state: Mapping[str, torch.Tensor],
                   path: str) -> str:
    """Refuse a checkpoint that lacks some of the model's weights or holds
    them in other shapes; else one line of what the model takes and leaves.

    Args:
        model: The model to load (not a DDP wrapper).
        state: The checkpoint's state dict (``module.`` prefixes removed).
        path: The checkpoint's path, for the messages.

    Returns:
        E.g. ``'CKPT: the model takes all 54 of its weights (backbone.*:
        54); left 120 this model does not use (head.*: 2, ...).'``

    Raises:
        ValueError: Naming the missing or mis-shaped weights; for ViT
            encoders the two architectures and the benchmarks that fit.
    """
    wanted: Dict[str, torch.Tensor] = model.state_dict()
    missing = [k for k in wanted if k not in state]
    shaped = [k for k in wanted if k in state and tuple(
        state[k].shape) != tuple(wanted[k].shape)]
    if missing or shaped:
        tops = sorted({k.split('.')[0] for k in state})
        problem = (f'lacks {len(missing)} of the model\'s {len(wanted)} '
                   f'weights (e.g. {missing[:4]})' if missing else
                   f'holds {len(shaped)} of the model\'s {len(wanted)} '
                   f'weights in other shapes (e.g. {shaped[:4]})')
        ours, theirs = vit_shape(wanted), vit_shape(state)
        if ours and theirs and ours != theirs:
            fits = fitting_benchmarks(theirs)
            advice = (
                f' The architectures differ: the checkpoint\'s encoder is a '
                f'{theirs}, this config\'s a {ours}. '
                + (f'Benchmarks with the checkpoint\'s encoder: '
                   f'{", ".join(fits)}.' if fits else
                   'No shipped benchmark has the checkpoint\'s encoder: copy '
                   'one and set model.backbone (arch, patch_size, '
                   'in_channels) to it.'))
        else:
            advice = (
                ' For a PMSN/MSN encoder, pass the pretraining checkpoint '
                '(backbone.* = online encoder) or the output of '
                'tools/model_converters/pmsn_to_backbone.py (--target for the '
                'EMA target).')
        raise ValueError(f'{path} {problem}; it has top-level names '
                         f'{tops}.{advice}')
    unused = sorted(set(state) - set(wanted))
    left = (f'; left {len(unused)} this model does not use '
            f'({_by_top(unused)})' if unused else '')
    return (f'{path}: the model takes all {len(wanted)} of its weights '
            f'({_by_top(wanted)}){left}.')
