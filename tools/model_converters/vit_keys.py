"""ViT weight names: mmpretrain's ``VisionTransformer`` and timm's.

timm's ``VisionTransformer`` names are also those of the DeiT encoder of
official MSN (``src/deit.py``, "mostly copy-paste from timm"), DINO and
MAE, so one table renames in both directions: mmpretrain -> timm for
``pmsn_to_backbone.py --timm`` and the official MSN export, timm ->
mmpretrain for the MSN import (``msn_checkpoints.py``), all beside this
file in ``tools/model_converters/``.
"""
import re
from collections import OrderedDict
from typing import Dict, Mapping, Sequence, Tuple

import torch

#: (mmpretrain name, timm name) of every ViT weight; ``{i}`` is a block
#: index, ``{p}`` ``weight`` or ``bias``
#: (mmpretrain/models/backbones/vision_transformer.py,
#: timm/models/vision_transformer.py).
VIT_KEY_PAIRS: Tuple[Tuple[str, str], ...] = (
    ('cls_token', 'cls_token'),
    ('pos_embed', 'pos_embed'),
    ('patch_embed.projection.{p}', 'patch_embed.proj.{p}'),
    ('pre_norm.{p}', 'norm_pre.{p}'),
    ('layers.{i}.ln1.{p}', 'blocks.{i}.norm1.{p}'),
    ('layers.{i}.attn.qkv.{p}', 'blocks.{i}.attn.qkv.{p}'),
    ('layers.{i}.attn.proj.{p}', 'blocks.{i}.attn.proj.{p}'),
    ('layers.{i}.attn.gamma1.weight', 'blocks.{i}.ls1.gamma'),
    ('layers.{i}.ln2.{p}', 'blocks.{i}.norm2.{p}'),
    ('layers.{i}.ffn.layers.0.0.{p}', 'blocks.{i}.mlp.fc1.{p}'),
    ('layers.{i}.ffn.layers.1.{p}', 'blocks.{i}.mlp.fc2.{p}'),
    ('layers.{i}.ffn.gamma2.weight', 'blocks.{i}.ls2.gamma'),
    ('ln1.{p}', 'norm.{p}'),
)

Rules = Tuple[Tuple[str, str], ...]


def _rule(source: str, target: str) -> Tuple[str, str]:
    """A template pair -> (anchored regex of ``source``, replacement)."""
    groups = [m for m in re.findall(r'\{(\w)\}', source)]
    pattern = re.escape(source)
    for name in groups:
        group = r'(\d+)' if name == 'i' else r'(weight|bias)'
        pattern = pattern.replace(re.escape('{' + name + '}'), group, 1)
    replacement = target
    for n, name in enumerate(groups, 1):
        replacement = replacement.replace('{' + name + '}', f'\\{n}')
    return f'^{pattern}$', replacement


def rename_rules(pairs: Sequence[Tuple[str, str]],
                 reverse: bool = False) -> Rules:
    """Regex rules that rename the first name of each pair to the second
    (``reverse``: the second to the first).

    Args:
        pairs: Template pairs as :data:`VIT_KEY_PAIRS`.
        reverse: Rename in the other direction.

    Returns:
        ``(pattern, replacement)`` pairs for ``re.sub``.
    """
    return tuple(
        _rule(*((b, a) if reverse else (a, b))) for a, b in pairs)


#: mmpretrain -> timm rules.
TIMM_RULES: Rules = rename_rules(VIT_KEY_PAIRS)
#: timm (and official MSN / DINO / MAE) -> mmpretrain rules.
MMPRETRAIN_RULES: Rules = rename_rules(VIT_KEY_PAIRS, reverse=True)


def rename(state_dict: Mapping[str, torch.Tensor], rules: Rules,
           unknown_message: str) -> 'OrderedDict[str, torch.Tensor]':
    """Rename every key by the first rule that matches it.

    Args:
        state_dict: A state dict.
        rules: E.g. :data:`TIMM_RULES`.
        unknown_message: Start of the error message, followed by the
            first 8 keys no rule matches.

    Returns:
        The same tensors under the new names, in the same order.

    Raises:
        ValueError: Naming the keys no rule matches.
    """
    out, unknown = OrderedDict(), []
    for key, value in state_dict.items():
        for pattern, repl in rules:
            if re.match(pattern, key):
                out[re.sub(pattern, repl, key)] = value
                break
        else:
            unknown.append(key)
    if unknown:
        raise ValueError(f'{unknown_message}{unknown[:8]}'
                         f'{" ..." if len(unknown) > 8 else ""}')
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
    return rename(
        state_dict, TIMM_RULES,
        'timm export supports mmpretrain VisionTransformer weights '
        "(out_type='cls_token'); these keys have no timm name: ")


def timm_vit_to_mmpretrain(
        state_dict: Dict[str, torch.Tensor]
) -> 'OrderedDict[str, torch.Tensor]':
    """Rename timm ``VisionTransformer`` keys (official MSN's DeiT) to
    mmpretrain's.

    Args:
        state_dict: Bare timm ViT state dict.

    Returns:
        State dict with mmpretrain ``VisionTransformer`` keys, same tensors.
    """
    return rename(
        state_dict, MMPRETRAIN_RULES,
        'these timm/DeiT ViT keys have no mmpretrain VisionTransformer '
        'name: ')
