"""Official MSN checkpoints <-> pmsn_mm PMSN checkpoints: the conversions of
``msn_to_pmsn.py`` and ``pmsn_to_msn.py`` beside this file (which import it
from their folder; nothing in the ``pmsn_mm`` package or a config needs it:
a converted file is a plain mmengine checkpoint).

Official MSN (facebookresearch/msn) writes two layouts:

- the *training* layout, the dict of ``src/msn_train.py``
  ``save_checkpoint`` (read back by ``load_checkpoint``):

  - ``encoder``, ``target_encoder``: state dicts of the DeiT encoder of
    ``src/deit.py`` (timm's ViT names: ``patch_embed.proj``, ``blocks.N``,
    ``norm``) with MSN's projection head inside it as ``fc.fc1 / bn1 / fc2
    / bn2 / fc3`` (``init_model``; no ``bn`` without ``use_bn``), keys
    prefixed ``module.`` when saved under DDP, older files with a
    ``scaling_bias`` the current official encoder does not use;
  - ``prototypes``: the (K, D) prototypes (1024 x 256 for ViT-S/16);
  - ``opt`` (AdamW state, 3 groups: weights, biases + norms, prototypes),
    ``epoch``, ``loss``, ``batch_size``, ``world_size``, ``lr`` and
    ``temperature``;

- the *released* layout, the files behind the README's download links
  (``vits16_800ep.pth.tar``, ...): ``target_encoder`` (under DDP's
  ``module.``, projector with BN) and ``prototypes`` only, no online
  encoder, optimizer state or epoch (facebookresearch/msn issue #7: "the
  current checkpoints only include the target_encoder"). The official
  evaluations (``linear_eval.py`` / ``logistic_eval.py``
  ``load_pretrained``) read ``target_encoder`` alone.

A pmsn_mm PMSN checkpoint is an mmengine checkpoint whose ``state_dict``
holds the online encoder (``backbone.*``: mmpretrain ``VisionTransformer``
names, ``vit_keys.py`` beside this file), its projector (``neck.mlp.*``), the
prototypes (``head.prototypes``) and the EMA target
(``target_net.module.0.*`` = backbone, ``target_net.module.1.*`` =
projector, ``target_net.steps``). :func:`msn_to_pmsn` writes it (loadable
with ``load_from``; from a released file the online and the target encoder
are both the released target encoder) and a backbone checkpoint of the
target encoder (``backbone.*``, what every probe config loads); what the
official dict holds besides the weights travels in ``msn_official`` so that
:func:`pmsn_to_msn` gives the official file back tensor for tensor, in its
layout.
"""
import math
import os.path as osp
import re
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import torch
from vit_keys import MMPRETRAIN_RULES, TIMM_RULES, rename

#: The keys of the official ``save_dict``, in its order.
OFFICIAL_FIELDS = ('encoder', 'opt', 'prototypes', 'target_encoder', 'epoch',
                   'loss', 'batch_size', 'world_size', 'lr', 'temperature')
#: What a file of the training layout needs to be converted.
REQUIRED_FIELDS = ('encoder', 'target_encoder', 'prototypes')
#: What a released file holds (README downloads; facebookresearch/msn
#: issue #7), all it needs.
RELEASED_FIELDS = ('target_encoder', 'prototypes')
#: The layouts a file is read in: name -> the fields it needs.
LAYOUTS = {'released': RELEASED_FIELDS, 'training': REQUIRED_FIELDS}
#: The scalars of the official dict (older files lack ``temperature``).
SCALAR_FIELDS = ('epoch', 'loss', 'batch_size', 'world_size', 'lr',
                 'temperature')
#: Encoder entries of older official files that the official code ignores
#: (``load_checkpoint`` renames ``scaling_bias`` to ``scaling_module.bias``,
#: which the current encoder does not have; the evaluations load
#: non-strictly): carried along for the way back, loaded nowhere.
UNUSED_ENCODER_KEYS = ('scaling_bias', 'scaling_module.bias')
#: Attention heads of the official DeiT constructors by width
#: (``src/deit.py``: deit_tiny 3, deit_small 6, deit_base 12, deit_large 16,
#: deit_huge 16); the weights do not hold them.
OFFICIAL_HEADS = {192: 3, 384: 6, 768: 12, 1024: 16, 1280: 16}
#: Size letters of the official widths (at their depths).
SIZE_NAMES = {(192, 12): 'Ti', (384, 12): 'S', (768, 12): 'B',
              (1024, 24): 'L', (1280, 32): 'H'}
#: mmpretrain ``VisionTransformer`` arch names of the official encoders.
MMPRETRAIN_ARCHS = {(192, 12): 'deit-tiny', (384, 12): 'deit-small',
                    (768, 12): 'deit-base', (1024, 24): 'large',
                    (1280, 32): 'huge'}
#: The released checkpoints (official README, "Pre-trained models").
RELEASED = {
    'vits16_800ep.pth.tar': 'ViT-S/16, 800 epochs',
    'vitb16_600ep.pth.tar': 'ViT-B/16, 600 epochs',
    'vitl16_600ep.pth.tar': 'ViT-L/16, 600 epochs',
    'vitb4_300ep.pth.tar': 'ViT-B/4, 300 epochs',
    'vitl7_200ep.pth.tar': 'ViT-L/7, 200 epochs',
}
#: The official DeiT's weight names (timm's, less the pre-norm and layer
#: scale official MSN never has).
DEIT_PATTERNS = tuple(
    pattern for pattern, _ in MMPRETRAIN_RULES
    if 'norm_pre' not in pattern and '.ls' not in pattern)
#: MSN's projection head inside the encoder (``init_model``).
PROJECTOR_PATTERN = (r'^fc\.(fc[123]\.(weight|bias)|bn[12]\.(weight|bias|'
                     r'running_mean|running_var|num_batches_tracked))$')
#: Key prefixes of a pmsn_mm PMSN state dict.
ONLINE, NECK, HEAD = 'backbone.', 'neck.mlp.', 'head.prototypes'
TARGET, TARGET_NECK = 'target_net.module.0.', 'target_net.module.1.mlp.'
TARGET_STEPS = 'target_net.steps'


def released_name(path: str) -> Optional[str]:
    """What the official README calls a released file, by its name (for
    reports only: the architecture is always read from the weights).

    Args:
        path: The file's path.

    Returns:
        E.g. ``'ViT-S/16, 800 epochs'``, or None for another name.
    """
    return RELEASED.get(osp.basename(path))


class MSNArch(NamedTuple):
    """What an official MSN encoder's weights fix (and its heads, which
    they do not).

    Args:
        width: Embedding width.
        depth: Number of blocks.
        patch: Patch size.
        channels: Input channels.
        img_size: Image size of the position embedding.
        mlp_hidden: Hidden width of the blocks' MLPs.
        proj_hidden: Hidden width of the projector.
        proj_out: Output width of the projector (= prototype dim).
        proj_bn: The projector has BatchNorm (``use_bn``).
        num_prototypes: K.
        num_heads: Attention heads, or None where unknown.
    """
    width: int
    depth: int
    patch: int
    channels: int
    img_size: int
    mlp_hidden: int
    proj_hidden: int
    proj_out: int
    proj_bn: bool
    num_prototypes: int
    num_heads: Optional[int]

    @property
    def name(self) -> str:
        """``'ViT-S/16'`` for the official sizes, else the numbers."""
        size = SIZE_NAMES.get((self.width, self.depth))
        if size and self.mlp_hidden == 4 * self.width:
            return f'ViT-{size}/{self.patch}'
        return (f'ViT of width {self.width}, depth {self.depth}, patch '
                f'{self.patch}')

    @property
    def mmpretrain_arch(self) -> Any:
        """mmpretrain's arch name where one fits, else an arch dict
        (None without ``num_heads``)."""
        name = MMPRETRAIN_ARCHS.get((self.width, self.depth))
        if name and self.mlp_hidden == 4 * self.width and \
                self.num_heads == OFFICIAL_HEADS[self.width]:
            return name
        if self.num_heads is None:
            return None
        return dict(embed_dims=self.width, num_layers=self.depth,
                    num_heads=self.num_heads,
                    feedforward_channels=self.mlp_hidden)

    def backbone_cfg(self) -> Dict[str, Any]:
        """The ``MSNViT`` config of the encoder (needs ``num_heads``)."""
        if self.mmpretrain_arch is None:
            raise ValueError(
                f'the number of attention heads of a {self.name} is not in '
                'its weights and not an official width '
                f'({sorted(OFFICIAL_HEADS)}); pass num_heads.')
        return dict(type='MSNViT', arch=self.mmpretrain_arch,
                    img_size=self.img_size, patch_size=self.patch,
                    in_channels=self.channels, drop_path_rate=0.0)

    def neck_cfg(self) -> Dict[str, Any]:
        """The ``MSNProjector`` config of the projection head."""
        return dict(type='MSNProjector', in_channels=self.width,
                    hidden_channels=self.proj_hidden,
                    out_channels=self.proj_out, with_bn=self.proj_bn)

    def describe(self) -> str:
        """One phrase: the encoder, projector and prototypes."""
        heads = (f'{self.num_heads} heads' if self.num_heads is not None
                 else 'heads unknown')
        bn = 'with' if self.proj_bn else 'without'
        return (f'{self.name} ({heads}, {self.img_size} px, '
                f'{self.channels} channels), projector {self.width}-'
                f'{self.proj_hidden}-{self.proj_hidden}-{self.proj_out} '
                f'{bn} BN, {self.num_prototypes} prototypes')


class MSNCheckpoint(NamedTuple):
    """An official MSN checkpoint, read and checked
    (:func:`read_msn_checkpoint`).

    Args:
        encoder: Online encoder state dict, ``module.`` and unused entries
            removed (official names).
        target_encoder: The same for the target encoder.
        prototypes: Tensor of shape (K, D).
        arch: The architecture read from the weights.
        official: What the pmsn_mm checkpoint carries for the way back
            (``layout``, ``module_prefix``, ``unused``, ``fields``,
            ``order``, ``opt``).
        layout: ``'training'`` (``encoder`` + ``target_encoder`` +
            ``prototypes`` + ``opt`` ...) or ``'released'``
            (``target_encoder`` + ``prototypes`` only; ``encoder`` is then
            the target encoder, there being no other).
    """
    encoder: 'OrderedDict[str, torch.Tensor]'
    target_encoder: 'OrderedDict[str, torch.Tensor]'
    prototypes: torch.Tensor
    arch: MSNArch
    official: Dict[str, Any]
    layout: str = 'training'


def load_msn_checkpoint(path: str) -> Any:
    """``torch.load`` a file on the CPU with ``weights_only=True`` (the
    official dict holds tensors, numbers and the optimizer state only).

    Args:
        path: The file.

    Returns:
        The loaded object.

    Raises:
        ValueError: When torch cannot read it (a truncated download, not a
            torch file) or it holds Python objects other than tensors and
            plain containers (DINO's and MAE's training checkpoints hold
            their ``argparse.Namespace``), naming what it found.
    """
    try:
        return torch.load(path, map_location='cpu', weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as err:  # noqa: BLE001  torch raises many kinds
        text = re.sub(r'\x1b\[[0-9;]*m', '', str(err))
        found = re.search(r'GLOBAL ([\w.]+)', text)
        if found:
            raise ValueError(
                f'{path} holds a {found.group(1)} object, which an official '
                'MSN checkpoint never does (it holds tensors, numbers and '
                "the optimizer state; DINO's and MAE's training checkpoints "
                'hold their argparse.Namespace): not unpickled, not an MSN '
                'checkpoint.') from None
        raise ValueError(
            f'{path} cannot be read as a PyTorch checkpoint '
            f'({type(err).__name__}: {text.splitlines()[0][:160]}): a '
            'truncated download, or not a torch file?') from None


def _kind(obj: Any) -> str:
    """What a loaded file that is not an MSN checkpoint looks like."""
    if not isinstance(obj, Mapping):
        return f'a {type(obj).__name__}, not a checkpoint dict'
    keys = set(obj)
    if {'student', 'teacher'} <= keys:
        return 'a DINO training checkpoint (student/teacher)'
    model = obj.get('model')
    if isinstance(model, Mapping) and any(
            str(k).startswith(('decoder_', 'mask_token')) for k in model):
        return 'an MAE checkpoint (model with decoder_* / mask_token)'
    if 'target_encoder' in keys and 'classifier' in keys:
        return ('a checkpoint of official linear_eval.py (target_encoder + '
                'classifier, no prototypes)')
    if 'state_dict' in keys:
        return ('an mmengine checkpoint (a pmsn_mm / mmpretrain model: use '
                'it as it is, or tools/model_converters/pmsn_to_msn.py for '
                'the official format)')
    if any(re.match(r'^(module\.)?(blocks\.0\.|cls_token$)', str(k))
           for k in keys):
        return ('a bare ViT state dict (timm / DINO / DeiT weights), not '
                'an MSN checkpoint dict')
    return 'a dict of another format'


def _strip_module(state: Mapping[str, Any], where: str) -> Tuple[
        'OrderedDict[str, torch.Tensor]', bool]:
    """Remove DDP's ``module.`` prefix; refuse a mix and non-tensors."""
    if not isinstance(state, Mapping) or not state:
        raise ValueError(f'{where} is {type(state).__name__}'
                         f'{" (empty)" if isinstance(state, Mapping) else ""}'
                         ', not a state dict of the DeiT encoder.')
    bad = [k for k, v in state.items() if not isinstance(v, torch.Tensor)]
    if bad:
        raise ValueError(f'{where} holds non-tensor entries {bad[:4]}: not '
                         'a state dict.')
    prefixed = [str(k).startswith('module.') for k in state]
    if any(prefixed) and not all(prefixed):
        raise ValueError(
            f'{where} mixes keys with and without the DDP prefix module. '
            f'(e.g. {[k for k, p in zip(state, prefixed) if not p][:3]}).')
    if all(prefixed):
        return OrderedDict((k[len('module.'):], v)
                           for k, v in state.items()), True
    return OrderedDict(state), False


def _split_encoder(state: 'OrderedDict[str, torch.Tensor]', where: str
                   ) -> Tuple['OrderedDict[str, torch.Tensor]',
                              'OrderedDict[str, torch.Tensor]',
                              'OrderedDict[str, torch.Tensor]']:
    """(DeiT weights, projector weights, unused entries); refuse others."""
    deit, projector, unused, unknown = (OrderedDict(), OrderedDict(),
                                        OrderedDict(), [])
    for key, value in state.items():
        if key in UNUSED_ENCODER_KEYS:
            unused[key] = value
        elif re.match(PROJECTOR_PATTERN, key):
            projector[key] = value
        elif any(re.match(p, key) for p in DEIT_PATTERNS):
            deit[key] = value
        else:
            unknown.append(key)
    if unknown:
        raise ValueError(
            f'{where} has keys that are neither the official DeiT encoder\'s '
            f'(src/deit.py) nor MSN\'s projector fc.fc1-fc3 / bn1-bn2 '
            f'(msn_train.py init_model): {unknown[:8]}'
            f'{" ..." if len(unknown) > 8 else ""}. Is it an MSN '
            'checkpoint of another model (conv stem, prediction head)?')
    return deit, projector, unused


def _expected_keys(depth: int, qkv_bias: bool, proj_bn: bool) -> List[str]:
    """Every key an official encoder of this shape has (official order)."""
    keys = ['cls_token', 'pos_embed', 'patch_embed.proj.weight',
            'patch_embed.proj.bias']
    for i in range(depth):
        b = f'blocks.{i}.'
        keys += [b + 'norm1.weight', b + 'norm1.bias', b + 'attn.qkv.weight']
        keys += [b + 'attn.qkv.bias'] if qkv_bias else []
        keys += [b + n + p for n in ('attn.proj.', 'norm2.', 'mlp.fc1.',
                                     'mlp.fc2.') for p in ('weight', 'bias')]
    keys += ['norm.weight', 'norm.bias']
    for n in (1, 2, 3):
        keys += [f'fc.fc{n}.weight', f'fc.fc{n}.bias']
        if proj_bn and n < 3:
            keys += [f'fc.bn{n}.{p}' for p in (
                'weight', 'bias', 'running_mean', 'running_var',
                'num_batches_tracked')]
    return keys


def _arch(deit: Mapping[str, torch.Tensor],
          projector: Mapping[str, torch.Tensor], prototypes: torch.Tensor,
          num_heads: Optional[int], where: str) -> MSNArch:
    """Read the architecture from the weights; refuse an incomplete or
    inconsistent encoder, naming the keys."""
    proj = deit.get('patch_embed.proj.weight')
    pos = deit.get('pos_embed')
    fc1, fc3 = projector.get('fc.fc1.weight'), projector.get('fc.fc3.weight')
    if proj is None or pos is None or fc1 is None or fc3 is None:
        missing = [k for k, v in (('patch_embed.proj.weight', proj),
                                  ('pos_embed', pos), ('fc.fc1.weight', fc1),
                                  ('fc.fc3.weight', fc3)) if v is None]
        raise ValueError(f'{where} lacks {missing}: a truncated or partial '
                         'state dict of the MSN encoder.')
    if proj.dim() != 4 or proj.shape[2] != proj.shape[3]:
        raise ValueError(f'{where} patch_embed.proj.weight has shape '
                         f'{tuple(proj.shape)}; a square patch embedding '
                         '(width, channels, p, p) was expected.')
    width, channels, patch = (int(s) for s in proj.shape[:3])
    grid = math.isqrt(max(int(pos.shape[1]) - 1, 0))
    if pos.dim() != 3 or grid * grid != pos.shape[1] - 1 or \
            pos.shape[2] != width:
        raise ValueError(f'{where} pos_embed has shape {tuple(pos.shape)}; '
                         f'(1, 1 + g * g, {width}) was expected.')
    blocks = sorted({int(m.group(1)) for k in deit
                     for m in [re.match(r'^blocks\.(\d+)\.', k)] if m})
    if blocks != list(range(len(blocks))) or not blocks:
        raise ValueError(f'{where} has blocks {blocks}: not 0..depth-1 '
                         '(a truncated state dict?).')
    proj_bn = 'fc.bn1.weight' in projector
    expected = _expected_keys(len(blocks), 'blocks.0.attn.qkv.bias' in deit,
                              proj_bn)
    missing = [k for k in expected if k not in deit and k not in projector]
    if missing:
        raise ValueError(f'{where} lacks {len(missing)} weights of a '
                         f'{len(blocks)}-block encoder: {missing[:8]} (a '
                         'truncated or partial state dict).')
    if prototypes.dim() != 2 or prototypes.shape[1] != fc3.shape[0]:
        raise ValueError(
            f'prototypes have shape {tuple(prototypes.shape)}; (K, '
            f'{fc3.shape[0]}) was expected (the projector output width).')
    if fc1.shape[1] != width:
        raise ValueError(f'{where} fc.fc1.weight has shape '
                         f'{tuple(fc1.shape)}; its input must be the '
                         f'encoder width {width}.')
    if num_heads is None:
        num_heads = OFFICIAL_HEADS.get(width)
    elif not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f'num_heads must be an int >= 1 dividing the '
                         f'embedding width {width}, got {num_heads!r}.')
    elif width % num_heads:
        raise ValueError(f'num_heads={num_heads} does not divide the '
                         f'embedding width {width}.')
    return MSNArch(width=width, depth=len(blocks), patch=patch,
                   channels=channels, img_size=grid * patch,
                   mlp_hidden=int(deit['blocks.0.mlp.fc1.weight'].shape[0]),
                   proj_hidden=int(fc1.shape[0]), proj_out=int(fc3.shape[0]),
                   proj_bn=proj_bn, num_prototypes=int(prototypes.shape[0]),
                   num_heads=num_heads)


def msn_layout(checkpoint: Any, name: str = 'the checkpoint') -> str:
    """Which official layout a loaded file has.

    Args:
        checkpoint: The loaded file.
        name: The file, for messages.

    Returns:
        ``'training'`` for a file with ``encoder`` (it then needs
        ``target_encoder`` and ``prototypes`` too), else ``'released'``
        (``target_encoder`` + ``prototypes``).

    Raises:
        ValueError: When the file has neither layout, naming what it lacks,
            what it has and the two layouts.
    """
    keys = set(checkpoint) if isinstance(checkpoint, Mapping) else set()
    layout = 'training' if 'encoder' in keys else 'released'
    missing = [k for k in LAYOUTS[layout] if k not in keys]
    if missing:
        tops = sorted(map(str, keys))[:12]
        raise ValueError(
            f'{name} is not an official MSN checkpoint: it lacks {missing} '
            f'(it has top-level keys {tops}: {_kind(checkpoint)}). Accepted '
            'layouts: a released file (the README downloads, e.g. '
            f'vits16_800ep.pth.tar) holds {list(RELEASED_FIELDS)}; a '
            'training checkpoint (src/msn_train.py save_checkpoint) holds '
            f"{list(REQUIRED_FIELDS)}, 'opt', 'epoch', ...")
    return layout


def read_msn_checkpoint(checkpoint: Any,
                        name: str = 'the checkpoint',
                        num_heads: Optional[int] = None) -> MSNCheckpoint:
    """Check an official MSN checkpoint and read its architecture.

    Args:
        checkpoint: The loaded file (:func:`load_msn_checkpoint`), of the
            training layout or the released one (:func:`msn_layout`).
        name: The file, for messages.
        num_heads: Attention heads; None: the official DeiT's for the
            width (:data:`OFFICIAL_HEADS`), unknown for other widths.

    Returns:
        The :class:`MSNCheckpoint` (of a released file: ``encoder`` is the
        target encoder).

    Raises:
        ValueError: For a file that is not an official MSN checkpoint (a
            DINO or MAE checkpoint, a bare state dict, a truncated or
            partial one), naming the keys.
    """
    layout = msn_layout(checkpoint, name)
    prototypes = checkpoint['prototypes']
    if not isinstance(prototypes, torch.Tensor):
        raise ValueError(f'{name}: prototypes is a '
                         f'{type(prototypes).__name__}, not a tensor.')
    encoders = ('encoder', 'target_encoder') if layout == 'training' else (
        'target_encoder', )
    parts, prefixes, unused = {}, {}, {}
    for field in encoders:
        state, prefixes[field] = _strip_module(checkpoint[field],
                                               f'{name} {field}')
        deit, projector, unused[field] = _split_encoder(
            state, f'{name} {field}')
        parts[field] = (deit, projector)
    first = encoders[0]
    arch = _arch(*parts[first], prototypes, num_heads, f'{name} {first}')
    for key, (deit, projector) in parts.items():
        online = {**parts[first][0], **parts[first][1]}
        this = {**deit, **projector}
        differ = sorted(set(online) ^ set(this)) + [
            k for k in online if k in this
            and online[k].shape != this[k].shape]
        if differ:
            raise ValueError(f'{name}: encoder and {key} differ in '
                             f'{differ[:6]}; they must be the same model.')
    if len(set(prefixes.values())) > 1:
        raise ValueError(f'{name}: only one of encoder and target_encoder '
                         'has the DDP prefix module.')
    official = dict(
        layout=layout,
        module_prefix=prefixes[first],
        unused={k: v for k, v in unused.items() if v},
        fields={k: checkpoint[k] for k in SCALAR_FIELDS if k in checkpoint},
        order=[k for k in checkpoint if k in OFFICIAL_FIELDS],
        opt=checkpoint.get('opt'))
    weights = {k: OrderedDict({**deit, **projector})
               for k, (deit, projector) in parts.items()}
    return MSNCheckpoint(
        encoder=weights[first], target_encoder=weights['target_encoder'],
        prototypes=prototypes, arch=arch, official=official, layout=layout)


def _to_pmsn(state: Mapping[str, torch.Tensor], vit_prefix: str,
             neck_prefix: str) -> 'OrderedDict[str, torch.Tensor]':
    """Official encoder weights -> pmsn_mm names under the prefixes."""
    deit = OrderedDict((k, v) for k, v in state.items()
                       if not k.startswith('fc.'))
    out = OrderedDict(
        (vit_prefix + k, v) for k, v in rename(
            deit, MMPRETRAIN_RULES, 'no mmpretrain name: ').items())
    out.update((neck_prefix + k[len('fc.'):], v) for k, v in state.items()
               if k.startswith('fc.'))
    return out


def model_cfg_text(arch: MSNArch) -> Optional[str]:
    """A config text with the model's backbone, neck and head (for
    ``meta['cfg']``: ``pmsn_to_backbone.py --timm`` reads the heads from
    it), or None when the heads are unknown."""
    if arch.mmpretrain_arch is None:
        return None
    head = dict(type='PMSNHead', num_prototypes=arch.num_prototypes,
                in_channels=arch.proj_out)
    return (f'model = dict(type=\'PMSN\', backbone={arch.backbone_cfg()!r}, '
            f'neck={arch.neck_cfg()!r}, head={head!r})\n')


def msn_to_pmsn(checkpoint: Any,
                name: str = 'the checkpoint',
                num_heads: Optional[int] = None,
                keep_opt: bool = False,
                online: bool = False) -> Tuple[Dict, Dict, MSNArch]:
    """Convert an official MSN checkpoint.

    From a released file (``target_encoder`` + ``prototypes``) the online
    and the target encoder of the PMSN checkpoint are both the released
    target encoder (the same tensors), with no optimizer state and no
    epoch.

    Args:
        checkpoint: The loaded official file, training or released layout.
        name: Its path, for messages and ``meta``.
        num_heads: Attention heads (see :func:`read_msn_checkpoint`).
        keep_opt: Carry the official optimizer state ``opt`` along (for
            :func:`pmsn_to_msn`; pmsn_mm's optimizer cannot use it).
        online: The backbone checkpoint holds the online encoder instead
            of the target encoder (which the official evaluations read);
            refused for a released file, which has no online encoder.

    Returns:
        ``(pmsn, backbone, arch)``: the PMSN checkpoint (``load_from``), the
        backbone checkpoint (``backbone.*`` of the target encoder) and the
        architecture.

    Raises:
        ValueError: For a file :func:`read_msn_checkpoint` refuses, and for
            ``online=True`` with a released file.
    """
    msn = read_msn_checkpoint(checkpoint, name, num_heads)
    if online and msn.layout == 'released':
        raise ValueError(
            f'{name} is a released MSN file (target_encoder + prototypes '
            'only): it has no online encoder, so there is no online backbone '
            '(--online / online=True); leave it out: the backbone file is '
            'the released target encoder.')
    state = _to_pmsn(msn.encoder, ONLINE, NECK)
    state[HEAD] = msn.prototypes
    state[TARGET_STEPS] = torch.tensor(0, dtype=torch.long)
    state.update(_to_pmsn(msn.target_encoder, TARGET, TARGET_NECK))
    official = dict(msn.official)
    if not keep_opt:
        official['opt'] = None
    epoch = official['fields'].get('epoch')
    meta = dict(source=name, msn=dict(arch=msn.arch._asdict(), epoch=epoch,
                                      layout=msn.layout))
    cfg = model_cfg_text(msn.arch)
    if cfg is not None:
        meta['cfg'] = cfg
    pmsn = dict(state_dict=state, meta=meta, msn_official=official)
    which = msn.encoder if online else msn.target_encoder
    backbone = OrderedDict(
        (k, v) for k, v in _to_pmsn(which, ONLINE, NECK).items()
        if k.startswith(ONLINE))
    backbone_meta = dict(meta, encoder='online' if online else 'target')
    return (pmsn, dict(state_dict=backbone, meta=backbone_meta), msn.arch)


def _from_pmsn(state: Mapping[str, torch.Tensor], vit_prefix: str,
               neck_prefix: str, where: str
               ) -> 'OrderedDict[str, torch.Tensor]':
    """pmsn_mm encoder weights -> official names (DeiT + ``fc.``)."""
    vit = OrderedDict((k[len(vit_prefix):], v) for k, v in state.items()
                      if k.startswith(vit_prefix))
    neck = OrderedDict((k[len(neck_prefix):], v) for k, v in state.items()
                       if k.startswith(neck_prefix))
    if not vit or not neck:
        tops = sorted({k.split('.')[0] for k in state})
        raise ValueError(
            f'{where} has no {"ViT" if not vit else "projector"} under '
            f'{vit_prefix if not vit else neck_prefix!r} (top-level names '
            f'{tops}): official MSN needs a PMSN checkpoint with an MSNViT '
            'backbone and an MSNProjector neck (a pretraining checkpoint of '
            'a configs/pmsn ViT config, or the output of msn_to_pmsn.py).')
    try:
        out = rename(vit, TIMM_RULES, 'no official DeiT name: ')
    except ValueError as err:
        raise ValueError(f'{where}: the backbone is not an mmpretrain '
                         f'VisionTransformer / MSNViT ({err}).') from None
    unknown = [k for k in neck
               if not re.match(PROJECTOR_PATTERN, 'fc.' + k)]
    if unknown:
        raise ValueError(f'{where}: the neck is not an MSNProjector '
                         f'(keys {unknown[:6]}).')
    out.update(('fc.' + k, v) for k, v in neck.items())
    return out


def official_optimizer_state(encoder: Mapping[str, torch.Tensor],
                             lr: float = 1e-3) -> Dict[str, Any]:
    """A fresh AdamW state with the official parameter groups
    (``msn_train.py`` ``init_opt``): weights; biases, BN and 1-d
    parameters (no weight decay); the prototypes.

    Args:
        encoder: The official encoder state dict (buffers are skipped).
        lr: The groups' lr (the official scheduler resets it).

    Returns:
        ``torch.optim.AdamW(...).state_dict()`` of those groups, as the
        official ``load_checkpoint`` loads it.
    """
    buffers = ('running_mean', 'running_var', 'num_batches_tracked')
    params = [(k, v) for k, v in encoder.items()
              if not k.endswith(buffers)]

    def decays(key: str, value: torch.Tensor) -> bool:
        return 'bias' not in key and 'bn' not in key and value.dim() != 1

    dummy = [torch.nn.Parameter(torch.zeros(0)) for _ in range(len(params))]
    groups: List[Dict[str, Any]] = [
        dict(params=[p for p, (k, v) in zip(dummy, params) if decays(k, v)]),
        dict(params=[p for p, (k, v) in zip(dummy, params)
                     if not decays(k, v)], WD_exclude=True, weight_decay=0),
        dict(params=[torch.nn.Parameter(torch.zeros(0))], lr=lr,
             LARS_exclude=True, WD_exclude=True, weight_decay=0),
    ]
    return torch.optim.AdamW(groups, lr=lr).state_dict()


def _cfg_value(meta: Mapping, *path: str) -> Any:
    """A value of the training config mmengine saved in ``meta['cfg']``."""
    text = meta.get('cfg') if isinstance(meta, Mapping) else None
    if not text:
        return None
    from mmengine.config import Config
    try:
        node: Any = Config.fromstring(text, '.py').to_dict()
    except Exception:  # noqa: BLE001  a config of another package
        return None
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def _same_weights(a: Mapping[str, torch.Tensor],
                  b: Mapping[str, torch.Tensor]) -> bool:
    """The two state dicts hold the same names and equal tensors."""
    return list(a) == list(b) and all(
        a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)


def pmsn_to_msn(checkpoint: Any,
                name: str = 'the checkpoint',
                module_prefix: Optional[bool] = None) -> Dict[str, Any]:
    """Convert a pmsn_mm PMSN checkpoint to the official MSN dict.

    A checkpoint made by :func:`msn_to_pmsn` gives its official file back
    in its layout: from a training-layout file every tensor, the scalars,
    the unused entries, ``opt`` if it was kept; from a released file
    ``target_encoder`` + ``prototypes`` (as long as its online encoder is
    still the target encoder, as converted; else it is written as below).
    Another checkpoint gets the training layout with a fresh optimizer
    state of the official groups (:func:`official_optimizer_state`), its
    epoch and, from the training config saved in it, the batch size, lr
    and temperature.

    Args:
        checkpoint: The loaded mmengine checkpoint (or its state dict).
        name: Its path, for messages.
        module_prefix: Prefix the encoders' keys with DDP's ``module.``, as
            the released files and official multi-GPU training; None: as
            the file :func:`msn_to_pmsn` read, else True.

    Returns:
        The official dict (``encoder``, ``opt``, ``prototypes``,
        ``target_encoder``, ``epoch``, ...; or ``target_encoder`` and
        ``prototypes`` for a released file).
    """
    if not isinstance(checkpoint, Mapping):
        raise ValueError(f'{name} holds a {type(checkpoint).__name__}, not '
                         'a checkpoint dict.')
    state = checkpoint.get('state_dict', checkpoint)
    if HEAD not in state:
        tops = sorted({str(k).split('.')[0] for k in state})
        raise ValueError(
            f'{name} has no {HEAD} (top-level names {tops}): official MSN '
            'needs the online and target encoders, the projector and the '
            'prototypes of a PMSN pretraining checkpoint (a backbone-only '
            'file of pmsn_to_backbone.py / msn_to_pmsn.py --backbone-out '
            'has no prototypes).')
    encoder = _from_pmsn(state, ONLINE, NECK, f'{name} (online encoder)')
    target = _from_pmsn(state, TARGET, TARGET_NECK,
                        f'{name} (target encoder)')
    official = checkpoint.get('msn_official') or {}
    prefix = official.get('module_prefix', True) if module_prefix is None \
        else module_prefix
    if official.get('layout') == 'released' and not _same_weights(
            encoder, target):
        official = {}  # trained since: both encoders, the training layout
    unused = official.get('unused') or {}
    encoders = {}
    for field, weights in (('encoder', encoder), ('target_encoder', target)):
        weights = OrderedDict(weights)
        weights.update(unused.get(field) or {})
        encoders[field] = OrderedDict(
            (('module.' if prefix else '') + k, v) for k, v in weights.items())
    prototypes = state[HEAD].detach().clone() if isinstance(
        state[HEAD], torch.nn.Parameter) else state[HEAD]
    if official.get('layout') == 'released':
        values = dict(target_encoder=encoders['target_encoder'],
                      prototypes=prototypes)
        order = [k for k in official.get('order') or RELEASED_FIELDS
                 if k in values]
        return OrderedDict((k, values[k]) for k in order)
    meta = checkpoint.get('meta') or {}
    fields = dict(official.get('fields') or {})
    if not official:
        fields = dict(
            epoch=int(meta.get('epoch', 0) or 0), loss=None,
            batch_size=_cfg_value(meta, 'train_dataloader', 'batch_size'),
            world_size=None,
            lr=_cfg_value(meta, 'optim_wrapper', 'optimizer', 'lr'),
            temperature=_cfg_value(meta, 'model', 'head', 'temperature'))
    opt = official.get('opt')
    if opt is None:
        opt = official_optimizer_state(encoder, fields.get('lr') or 1e-3)
    values = dict(encoder=encoders['encoder'], opt=opt,
                  prototypes=prototypes,
                  target_encoder=encoders['target_encoder'], **fields)
    order = official.get('order') or [
        k for k in OFFICIAL_FIELDS if k in values]
    return OrderedDict((k, values[k]) for k in order)
