"""Official MSN checkpoints and what the official code computes from them:
the fixture of tests/test_tools/test_msn_checkpoints.py, and the exactness
check of the converter at full size.

Imports the official modules (``src.deit``, ``src.msn_train.init_model``,
``src.losses.init_msn_loss``) from a checkout of facebookresearch/msn given
by path (the tests cannot fetch it)::

    git clone https://github.com/facebookresearch/msn ../msn
    python .dev_scripts/msn_official_fixture.py --msn-root ../msn
    python .dev_scripts/msn_official_fixture.py --msn-root ../msn --full

Without ``--full`` it writes ``tests/fixtures/msn_official/`` (``--out``;
``--cases`` for some of them only): for each narrowed encoder, an official
checkpoint saved as the official ``save_checkpoint`` saves one
(``<case>.pth.tar``), or, for the released case, as the README's downloads
hold one (the official target encoder's ``state_dict()`` under DDP's
``module.`` + ``prototypes``, nothing else: facebookresearch/msn issue #7),
and what the official code computes from it (``<case>_expected.pt``;
for the released case both "encoders" are that target encoder, as the
converter makes them, and the training step's online encoder is a copy of
it): the inputs, the CLS
features of both encoders (after the final norm), ``forward_blocks`` (the
official evaluations' lastCLS / concat-n features, before it), the
projector outputs and prototype logits (eval mode), and one training step's
loss terms on a batch of views (train mode, patch-drop with the recorded
kept tokens). The encoders come from the official ``init_model`` with a
narrowed DeiT registered in ``src.deit`` (``init_model`` sizes the
projector's input from the model's name, so its first layer is rebuilt
with the narrow width and initialised as ``init_model`` does); every
weight, norm and BN statistic is then perturbed (seeded), the target
differently from the online encoder, so that no two weights are equal and
a swapped name changes the outputs.

With ``--full`` it builds ViT-S/16 (``deit_small``) and ViT-B/4
(``deit_base_p4``, its first 2 blocks) with the official ``init_model`` at
224 px, saves them in the official format (ViT-S/16 also in the released
layout), converts them with ``msn_to_pmsn`` of
``tools/model_converters/msn_checkpoints.py``, builds pmsn_mm's model
from the converted file and prints the largest differences of the CLS
features, ``forward_blocks`` features, projector outputs and prototype
logits on the same images (nothing is written).
"""
import argparse
import copy
import hashlib
import logging
import os
import os.path as osp
import subprocess
import sys
import time
from functools import partial
from typing import Dict, List

import torch

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
OUT = osp.join(REPO, 'tests', 'fixtures', 'msn_official')

#: The narrowed encoders of the fixture: the official model name they stand
#: for, and the variants of the official format each file exercises.
CASES = {
    'vit-narrow-p16': dict(
        stands_for='deit_small (ViT-S/16)', patch=16, width=8, depth=4,
        heads=2, img=32, focal=16, hidden=16, out=8, prototypes=12,
        use_bn=True, module_prefix=True, scaling_bias=True),
    'vit-narrow-p4': dict(
        stands_for='deit_base_p4 (ViT-B/4)', patch=4, width=8, depth=2,
        heads=2, img=16, focal=8, hidden=16, out=8, prototypes=12,
        use_bn=False, module_prefix=False, scaling_bias=False),
    'vit-narrow-p16-released': dict(
        stands_for='vits16_800ep.pth.tar (ViT-S/16, released layout)',
        patch=16, width=8, depth=4, heads=2, img=32, focal=16, hidden=16,
        out=8, prototypes=12, use_bn=True, module_prefix=True,
        scaling_bias=False, layout='released'),
}
#: What the README's downloads hold (facebookresearch/msn issue #7).
RELEASED_FIELDS = ('target_encoder', 'prototypes')
BATCH = 3
NUM_FOCAL = 2
MASK = 0.15
TAU, SHARPEN = 0.1, 0.25


def import_official(root: str):
    """The official modules, imported from the checkout at ``root``."""
    if not osp.isfile(osp.join(root, 'src', 'msn_train.py')):
        sys.exit(f'{root} is not a checkout of facebookresearch/msn (no '
                 'src/msn_train.py).')
    sys.path.insert(0, root)
    import src.deit as deit
    from src.losses import init_msn_loss
    from src.msn_train import init_model
    from src.utils import trunc_normal_
    logging.getLogger().setLevel(logging.WARNING)  # init_model prints
    return deit, init_model, init_msn_loss, trunc_normal_


def perturb(state: Dict[str, torch.Tensor], seed: int) -> None:
    """Give every weight its own values (in place): norms and BN scales
    around 1, everything else around its value, running variances
    positive, batch counters distinct."""
    gen = torch.Generator().manual_seed(seed)
    for key, value in state.items():
        if key.endswith('num_batches_tracked'):
            value.fill_(int(torch.randint(1, 1000, (), generator=gen)))
        elif key.endswith('running_var'):
            value.copy_(torch.rand(value.shape, generator=gen) + 0.5)
        elif value.is_floating_point():
            value.add_(0.1 * torch.randn(value.shape, generator=gen))


def build_narrow(official, case: Dict, seed: int) -> torch.nn.Module:
    """A narrowed encoder through the official ``init_model``."""
    deit, init_model, _, trunc_normal_ = official
    name = f"narrow_small_p{case['patch']}"  # 'small': init_model's 384
    setattr(deit, name, partial(
        deit.VisionTransformer, patch_size=case['patch'],
        embed_dim=case['width'], depth=case['depth'],
        num_heads=case['heads'], mlp_ratio=4, qkv_bias=True,
        norm_layer=partial(torch.nn.LayerNorm, eps=1e-6),
        img_size=[case['img']]))
    torch.manual_seed(seed)
    encoder = init_model(
        device=torch.device('cpu'), model_name=name, use_bn=case['use_bn'],
        hidden_dim=case['hidden'], output_dim=case['out'],
        drop_path_rate=0.0)
    # init_model sizes fc1 for 'small' (384): rebuild it for the narrow
    # width, initialised as init_model initialises every Linear
    encoder.fc.fc1 = torch.nn.Linear(case['width'], case['hidden'])
    trunc_normal_(encoder.fc.fc1.weight, std=0.02)
    torch.nn.init.constant_(encoder.fc.fc1.bias, 0)
    return encoder


def official_save_dict(encoder, target, prototypes, case: Dict) -> Dict:
    """The official ``save_checkpoint``'s dict (msn_train.py), with a
    fresh AdamW state of ``init_opt``'s three groups; for a case of the
    released layout, its ``target_encoder`` and ``prototypes`` alone."""
    prefix = 'module.' if case.get('module_prefix') else ''

    def state(model):
        # copies: the training step of the fixture runs after this dict is
        # made and updates the BatchNorm statistics in place
        out = {prefix + k: v.detach().clone()
               for k, v in model.state_dict().items()}
        if case.get('scaling_bias'):  # what older released files carry
            out[prefix + 'scaling_bias'] = torch.zeros(1)
        return out

    params = list(encoder.named_parameters())
    groups = [
        {'params': [p for n, p in params if 'bias' not in n and 'bn' not in n
                    and len(p.shape) != 1]},
        {'params': [p for n, p in params if 'bias' in n or 'bn' in n
                    or len(p.shape) == 1], 'WD_exclude': True,
         'weight_decay': 0},
        {'params': [prototypes], 'lr': 1e-3, 'LARS_exclude': True,
         'WD_exclude': True, 'weight_decay': 0},
    ]
    save_dict = {
        'encoder': state(encoder),
        'opt': torch.optim.AdamW(groups).state_dict(),
        'prototypes': prototypes.detach().clone(),
        'target_encoder': state(target),
        'epoch': 800, 'loss': 2.5, 'batch_size': 64, 'world_size': 32,
        'lr': 1e-3, 'temperature': TAU,
    }
    if case.get('layout') == 'released':
        return {k: save_dict[k] for k in RELEASED_FIELDS}
    return save_dict


@torch.no_grad()
def features(model, images: torch.Tensor, depth: int) -> Dict:
    """CLS after the final norm, forward_blocks(1) and forward_blocks(n)
    (the official evaluations' features, before the final norm),
    forward_return_n_last_blocks(n) (each of the n through the final norm,
    DINO's / VISSL's concat-n) and the projector output, in eval mode;
    n = min(4, depth)."""
    model.eval()
    head, model.fc = model.fc, None
    cls = model.forward_features(images, 0.)
    model.fc = head
    n = min(4, depth)
    return dict(cls=cls, blocks1=model.forward_blocks(images, 1),
                blocks_n=model.forward_blocks(images, n),
                blocks_n_normed=model.forward_return_n_last_blocks(images, n),
                projector=model(images))


def loss_step(official, encoder, target, prototypes, views: List,
              patch_drop: float) -> Dict:
    """One official training step's loss terms (train mode), recording
    the tokens the official patch-drop keeps."""
    _, _, init_msn_loss, _ = official
    encoder.train()
    target.train()
    kept = []
    randperm = torch.randperm

    def recording(*args, **kwargs):
        out = randperm(*args, **kwargs)
        kept.append(out)
        return out

    torch.randperm = recording
    try:
        _, z = encoder(views[1:], return_before_head=True,
                       patch_drop=patch_drop)
    finally:
        torch.randperm = randperm
    with torch.no_grad():
        h, _ = target(views[0], return_before_head=True)
    num_anchor_views = len(views) - 1
    msn = init_msn_loss(num_views=num_anchor_views, tau=TAU, me_max=True,
                        return_preds=True)
    num_proto = prototypes.shape[0]
    labels = torch.eye(num_proto)  # label smoothing 0: one-hot
    ploss, me_max, ent, logs, targets = msn(
        T=SHARPEN, use_sinkhorn=True, use_entropy=False,
        anchor_views=z.float(), target_views=h.detach().float(),
        proto_labels=labels, prototypes=prototypes)
    # p-bar of the anchors, as the official me-max sees it
    normed = torch.nn.functional.normalize
    probs = torch.softmax(normed(z) @ normed(prototypes).T / TAU, dim=1)
    num_patches = views[1].shape[-1] // encoder.patch_embed.patch_size
    num_keep = int(num_patches**2 * (1 - patch_drop))
    (perm, ) = kept
    return dict(ploss=ploss.detach(), me_max=me_max.detach(),
                mean_probs=probs.mean(dim=0).detach(),
                num_prototypes_used=torch.tensor(float(logs['np'])),
                max_target_prob=logs['max_t'].detach(),
                kept_patches=perm[:num_keep].sort().values,
                targets=targets.detach())


def make_case(official, name: str, case: Dict, out: str) -> Dict:
    """Write ``<name>.pth.tar`` and ``<name>_expected.pt``."""
    seed = sum(map(ord, name))
    encoder = build_narrow(official, case, seed)
    target = copy.deepcopy(encoder)
    perturb(encoder.state_dict(), seed + 1)
    perturb(target.state_dict(), seed + 2)
    if case.get('layout') == 'released':
        # no online encoder in the file: the converter's online encoder is
        # the target encoder, so is the official step's here
        encoder = copy.deepcopy(target)
    gen = torch.Generator().manual_seed(seed + 3)
    bound = (1.0 / case['out'])**0.5  # the official prototype init
    prototypes = torch.nn.Parameter(
        (torch.rand(case['prototypes'], case['out'], generator=gen) * 2 - 1)
        * bound)
    # inputs of float16 values (stored as float16: half the bytes), used
    # in float32; the features are of the target view's images
    views = [torch.randn(BATCH, 3, case['img'], case['img'], generator=gen)
             for _ in range(2)] + [
                 torch.randn(BATCH, 3, case['focal'], case['focal'],
                             generator=gen) for _ in range(NUM_FOCAL)]
    views = [v.half().float() for v in views]
    images = views[0]
    ckpt = official_save_dict(encoder, target, prototypes, case)
    expected = dict(
        case=dict(case),
        online=features(encoder, images, case['depth']),
        target=features(target, images, case['depth']),
        views=[v.half() for v in views], mask_ratio=MASK, temperature=TAU,
        sharpen_temperature=SHARPEN)
    with torch.no_grad():
        for key in ('online', 'target'):
            z = expected[key]['projector']
            normed = torch.nn.functional.normalize
            expected[key]['logits'] = normed(z) @ normed(prototypes).T / TAU
    torch.manual_seed(seed + 4)
    expected['step'] = loss_step(official, encoder, target, prototypes,
                                 views, MASK)
    expected['provenance'] = provenance(official)
    os.makedirs(out, exist_ok=True)
    path = osp.join(out, f'{name}.pth.tar')
    torch.save(ckpt, path)
    torch.save(expected, osp.join(out, f'{name}_expected.pt'))
    return dict(file=path, bytes=os.path.getsize(path) + os.path.getsize(
        osp.join(out, f'{name}_expected.pt')))


def provenance(official) -> Dict[str, str]:
    """The official commit, this script and torch's version."""
    root = osp.dirname(osp.dirname(official[0].__file__))
    try:
        commit = subprocess.run(['git', '-C', root, 'rev-parse', 'HEAD'],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ''
    with open(official[0].__file__, 'rb') as f:
        deit_sha = hashlib.sha256(f.read()).hexdigest()[:16]
    return dict(msn_commit=commit or 'unknown (not a git checkout)',
                deit_py_sha256=deit_sha, torch=torch.__version__,
                script='.dev_scripts/msn_official_fixture.py')


def check_full(official) -> None:
    """Official vs converted pmsn_mm model at full size (printed): both
    encoders of the training layout, and for ViT-S/16 both encoders
    converted from the released layout (target_encoder + prototypes), which
    must give the official target encoder's outputs."""
    sys.path.insert(0, REPO)
    sys.path.append(osp.join(REPO, 'tools', 'model_converters'))
    from mmengine.registry import init_default_scope
    from mmpretrain.registry import MODELS
    from msn_checkpoints import msn_to_pmsn

    import pmsn_mm  # noqa: F401
    _, init_model, _, _ = official
    init_default_scope('mmpretrain')
    prefixes = {'online': ('backbone.', 'neck.'),
                'target': ('target_net.module.0.', 'target_net.module.1.')}
    normed = torch.nn.functional.normalize
    for model_name, blocks in (('deit_small', None), ('deit_base_p4', 2)):
        start = time.time()
        torch.manual_seed(0)
        encoder = init_model(device=torch.device('cpu'),
                             model_name=model_name, use_bn=True,
                             hidden_dim=2048, output_dim=256,
                             drop_path_rate=0.0)
        if blocks:
            encoder.blocks = encoder.blocks[:blocks]
        target = copy.deepcopy(encoder)
        perturb(encoder.state_dict(), 1)
        perturb(target.state_dict(), 2)
        prototypes = torch.nn.Parameter(
            torch.empty(1024, 256).uniform_(-1 / 16, 1 / 16))
        ckpt = official_save_dict(encoder, target, prototypes,
                                  dict(module_prefix=True))
        layouts = [('training', ckpt)]
        if model_name == 'deit_small':  # vits16_800ep.pth.tar's layout
            layouts.append(('released', official_save_dict(
                encoder, target, prototypes,
                dict(module_prefix=True, layout='released'))))
        images = torch.randn(2, 3, 224, 224)
        wants = {}
        for which, model in (('online', encoder), ('target', target)):
            wants[which] = features(model, images, len(model.blocks))
            wants[which]['logits'] = normed(wants[which]['projector']) @ \
                normed(prototypes.detach()).T / TAU
        label = model_name + (f' ({blocks} blocks)' if blocks else '')
        for layout, file in layouts:
            pmsn, _, arch = msn_to_pmsn(file, model_name)
            for which in ('online', 'target'):
                # a released file's two encoders are its target encoder
                want = wants['target' if layout == 'released' else which]
                got = ours(MODELS, arch, pmsn['state_dict'],
                           *prefixes[which], images, prototypes)
                for key in ('cls', 'blocks1', 'blocks_n', 'blocks_n_normed',
                            'projector', 'logits'):
                    err = (got[key] - want[key]).abs().max().item()
                    scale = want[key].abs().max().item()
                    print(f'{label} {layout:8s} {which:6s} {key:15s} max '
                          f'|ours - official| = {err:.2e} (max |official| '
                          f'{scale:.2e})')
        print(f'{model_name}: {arch.describe()} [{time.time() - start:.1f} s]')


@torch.no_grad()
def ours(models, arch, state, prefix: str, neck_prefix: str,
         images: torch.Tensor, prototypes: torch.Tensor) -> Dict:
    """pmsn_mm's features of the converted weights."""
    def part(p):
        return {k[len(p):]: v for k, v in state.items() if k.startswith(p)}

    depth = arch.depth
    n = min(4, depth)
    cfg = arch.backbone_cfg()
    final = models.build(dict(cfg, out_type='cls_token'))
    final.load_state_dict(part(prefix), strict=True)
    raw = models.build(dict(cfg, out_type='cls_token', final_norm=False,
                            out_indices=list(range(-n, 0))))
    raw.load_state_dict({k: v for k, v in part(prefix).items()
                         if not k.startswith('ln1.')}, strict=True)
    neck = models.build(arch.neck_cfg())
    neck.load_state_dict(part(neck_prefix), strict=True)
    for module in (final, raw, neck):
        module.eval()  # (mmpretrain's ViT.train returns None: no chaining)
    cls = final(images)[-1]
    tokens = raw(images)
    z = neck((cls, ))[0]
    normed = torch.nn.functional.normalize
    normed_tokens = [final.ln1(t) for t in tokens]
    return dict(cls=cls, blocks1=tokens[-1], blocks_n=torch.cat(tokens, 1),
                blocks_n_normed=torch.cat(normed_tokens, 1), projector=z,
                logits=normed(z) @ normed(prototypes.detach()).T / TAU)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--msn-root', required=True,
                        help='checkout of facebookresearch/msn')
    parser.add_argument('--out', default=OUT, help='fixture folder')
    parser.add_argument('--cases', nargs='+', choices=sorted(CASES),
                        default=list(CASES),
                        help='the cases to write (default: all)')
    parser.add_argument('--full', action='store_true',
                        help='check ViT-S/16 and ViT-B/4 (2 blocks) at 224 px '
                        'against the converter instead of writing the '
                        'fixture')
    args = parser.parse_args(argv)
    official = import_official(osp.abspath(args.msn_root))
    if args.full:
        check_full(official)
        return
    for name in args.cases:
        case = CASES[name]
        made = make_case(official, name, case, args.out)
        print(f'{name}: {osp.relpath(made["file"], REPO)} + expected, '
              f'{made["bytes"] / 1024:.0f} KiB')


if __name__ == '__main__':
    main()
