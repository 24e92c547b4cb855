"""One training step of official MSN beside pmsn_mm's, same config.

Official MSN (facebookresearch/msn, a checkout given by ``--msn-root``) has
its training step inline in ``src/msn_train.py``'s ``main()``; this script
rebuilds that step from the checkout's public functions: ``init_model``
(ViT + 3-layer projector), ``init_opt`` (AdamW, its 3 param groups, lr and
wd schedules), ``init_msn_loss`` (with its me-max term, and the entropy term
at weight 0 as its ``msn_vits16.yaml`` runs it), prototypes, ``grad_logger``,
gradient clipping and the momentum update of the target encoder, one
parameter at a time, and ``float()`` of its four losses. The geometry comes
from the pmsn_mm config: ViT width, depth, heads and patch size, the view
groups (target + random views at the first size, focal views at the
second), patch-drop ratio, projector, prototypes, temperatures, Sinkhorn,
clip norm, lr and weight decay.

Official MSN draws its views in CPU dataloader workers, outside the step:
its side gets pre-made views of the right shapes, already on the device.
pmsn_mm's side gets the decoded batch (``step_profiler.make_batch``) and
draws its views on the device inside the step (``step_profiler``'s phases:
views, forward+loss, backward, clipping, optimiser, EMA target, hooks).
``--amp bf16`` autocasts the official encoder forwards (the official code
casts their outputs to float32 for the loss) and pmsn_mm's forward+loss.

Per side: median ms per step over ``--repeats`` steps after one warm-up
(device synchronised around each step), images/s, peak memory (CUDA:
``max_memory_allocated``; n/a on CPU) and syncs per step: on CUDA the
synchronising CUDA calls that ``torch.cuda.set_sync_debug_mode('warn')``
reports; on CPU the host reads of tensor values that
``tests/_profiling/op_counter.py``'s ``OpCounter`` sees (``.item()``/
``float()``, data-sized outputs, ...; reads of the optimiser's host step
counters not counted), the proxy for the syncs the same code makes on a GPU.

Examples::

    python tools/speed/benchmark_official_msn.py \\
        configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py \\
        --msn-root ../msn --device cuda --amp bf16 --batch-size 128
    python tools/speed/benchmark_official_msn.py \\
        configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py \\
        --msn-root ../msn --narrow --batch-size 4 --repeats 3
"""
import argparse
import contextlib
import copy
import gc
import importlib
import logging
import os.path as osp
import sys
import types
import warnings
from functools import partial
from typing import Any, Callable, Dict, Optional, Sequence

import torch
from mmengine.config import Config

import pmsn_mm  # noqa: F401  (registers the models)

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
from side_by_side import (build_ours, measure, narrow_config,  # noqa
                          view_groups, vit_geometry)

sys.path.pop(0)
#: Official ``init_model`` sizes its projector by the model name's size.
WIDTH_NAMES = {192: 'tiny', 384: 'small', 768: 'base', 1024: 'large',
               1280: 'huge'}
#: Official ``msn_vits16.yaml``: entropy term computed at weight 0; lr and
#: weight-decay schedule ends (their values do not change the step's cost).
ENT_WEIGHT, FINAL_WD, FINAL_LR, WARMUP_EPOCHS = 0.0, 0.4, 1e-6, 15
OFFICIAL, OURS = 'official MSN', 'pmsn_mm'


def import_official(root: str) -> types.SimpleNamespace:
    """Import ``src.msn_train``, ``src.losses``, ``src.utils`` and
    ``src.deit`` of an official MSN checkout (its root logging set-up and
    ``cudnn.benchmark`` are undone for this process).

    Args:
        root: The checkout (holds ``src/msn_train.py``).
    """
    if not osp.isfile(osp.join(root, 'src', 'msn_train.py')):
        raise FileNotFoundError(f'--msn-root {root!r} holds no '
                                'src/msn_train.py (a facebookresearch/msn '
                                'checkout)')
    for name in [m for m in sys.modules if m.split('.')[0] == 'src']:
        del sys.modules[name]
    root_logger = logging.getLogger()
    handlers, level = list(root_logger.handlers), root_logger.level
    cudnn = torch.backends.cudnn.benchmark
    sys.path.insert(0, osp.abspath(root))
    try:
        mods = {n: importlib.import_module(f'src.{n}')
                for n in ('msn_train', 'losses', 'utils', 'deit')}
    finally:
        sys.path.pop(0)
        root_logger.handlers[:], root_logger.level = handlers, level
        torch.backends.cudnn.benchmark = cudnn
    return types.SimpleNamespace(**mods)


def build_official(src: types.SimpleNamespace, cfg: Config, batch: int,
                   device: torch.device,
                   amp: Optional[str]) -> Callable[[], Any]:
    """Official MSN's training step for the config's geometry, as a closure
    over its encoders, prototypes, optimiser, schedules and views.

    Args:
        src: :func:`import_official`'s modules.
        cfg: The pmsn_mm config.
        batch: Images per batch.
        device: Where the step runs.
        amp: ``'bf16'``: bfloat16 autocast around the encoder forwards.
    """
    geo, groups, model = vit_geometry(cfg), view_groups(cfg), cfg.model
    if geo['embed_dims'] not in WIDTH_NAMES:
        raise ValueError(
            f"official init_model takes ViT widths {sorted(WIDTH_NAMES)} "
            f"(by model name); the config's is {geo['embed_dims']}")
    name = f"deit_{WIDTH_NAMES[geo['embed_dims']]}_pmsn_bench"
    setattr(src.deit, name, partial(
        src.deit.VisionTransformer, img_size=[geo['img_size']],
        patch_size=geo['patch_size'], in_chans=geo['in_channels'],
        embed_dim=geo['embed_dims'], depth=geo['num_layers'],
        num_heads=geo['num_heads'], qkv_bias=True,
        mlp_ratio=geo['feedforward_channels'] / geo['embed_dims'],
        norm_layer=partial(torch.nn.LayerNorm, eps=1e-6)))
    neck, head, loss_cfg = model.neck, model.head, model.head.loss
    logging.getLogger().setLevel(logging.WARNING)  # init_model logs it all
    encoder = src.msn_train.init_model(
        device=device, model_name=name, use_pred=False,
        use_bn=neck.get('with_bn', True), two_layer=False,
        hidden_dim=neck.hidden_channels, output_dim=neck.out_channels,
        drop_path_rate=model.backbone.get('drop_path_rate', 0.0))
    target = copy.deepcopy(encoder)
    num_views = sum(n for n, _ in groups)
    msn = src.losses.init_msn_loss(num_views=num_views - 1,
                                   tau=head.temperature, me_max=True,
                                   return_preds=True)
    k, dim = head.num_prototypes, neck.out_channels
    prototypes = torch.empty(k, dim, device=device).uniform_(
        -dim**-0.5, dim**-0.5).requires_grad_()
    proto_labels = torch.eye(k, device=device)  # one-hot, no smoothing
    opt = cfg.optim_wrapper.optimizer
    epochs = cfg.train_cfg.get('max_epochs', 300)
    _, optimizer, scheduler, wd_scheduler = src.msn_train.init_opt(
        encoder=encoder, prototypes=prototypes, wd=opt.weight_decay,
        final_wd=FINAL_WD, start_lr=opt.lr / 5, ref_lr=opt.lr,
        final_lr=FINAL_LR, iterations_per_epoch=1000,
        warmup=WARMUP_EPOCHS, num_epochs=epochs)
    clip = (cfg.optim_wrapper.get('clip_grad') or {}).get('max_norm', 0)
    imgs = [torch.randn(batch, geo['in_channels'], size, size, device=device)
            for n, size in groups for _ in range(n)]
    increment = (1.0 - 0.996) / (1000 * epochs * 1.25)
    count = [0]
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) \
        if amp == 'bf16' else contextlib.nullcontext

    def step():
        optimizer.zero_grad()
        with autocast():
            _, z = encoder(imgs[1:], return_before_head=True,
                           patch_drop=model.get('mask_ratio', 0.15))
            with torch.no_grad():
                h, _ = target(imgs[0], return_before_head=True)
        ploss, me_max, ent, _, _ = msn(
            T=loss_cfg.sharpen_temperature,
            use_sinkhorn=loss_cfg.get('use_sinkhorn', True),
            use_entropy=True, anchor_views=z.float(),
            target_views=h.float().detach(), proto_labels=proto_labels,
            prototypes=prototypes)
        loss = ploss + loss_cfg.get('prior_weight', 1.0) * me_max \
            + ENT_WEIGHT * ent
        scheduler.step()
        wd_scheduler.step()
        loss.backward()
        with torch.no_grad():
            prototypes.grad.data = src.utils.AllReduceSum.apply(
                prototypes.grad.data)
        src.utils.grad_logger(encoder.named_parameters())
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(encoder.parameters(), clip)
        optimizer.step()
        with torch.no_grad():  # EMA of the target, parameter by parameter
            m = 0.996 + increment * count[0]
            count[0] += 1
            for online, ema in zip(encoder.parameters(), target.parameters()):
                ema.mul_(m).add_((1.0 - m) * online.detach())
        with warnings.catch_warnings():  # torch: float() of a grad tensor
            warnings.filterwarnings('ignore', 'Converting a tensor with')
            return float(loss), float(ploss), float(me_max), float(ent)

    step.host_state = lambda: [s['step'] for s in optimizer.state.values()
                               if torch.is_tensor(s.get('step'))]
    return step


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='a PMSN config with an MSNViT')
    parser.add_argument('--msn-root', required=True,
                        help='a facebookresearch/msn checkout')
    parser.add_argument('--device', default='cpu', help='cpu or cuda')
    parser.add_argument('--amp', choices=['bf16', 'none'], default='none',
                        help='bfloat16 autocast of the forwards')
    parser.add_argument('--batch-size', type=int, default=None,
                        help="images per batch (default: the config's)")
    parser.add_argument('--repeats', type=int, default=5,
                        help='timed steps per side (median)')
    parser.add_argument('--narrow', action='store_true',
                        help='CPU sizes for both sides (side_by_side.NARROW)')
    parser.add_argument('--threads', type=int, default=None,
                        help='torch CPU threads')
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Run both steps and print the table.

    Returns:
        ``dict(rows={side: dict(ms, images_per_s, peak_mib, syncs)},
        ratio=pmsn_mm images/s / official images/s, batch, views)``.
    """
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = Config.fromfile(args.config)
    if args.narrow:
        narrow_config(cfg)
    batch = args.batch_size or cfg.train_dataloader.batch_size
    device, amp = torch.device(args.device), (
        None if args.amp == 'none' else args.amp)
    src = import_official(args.msn_root)
    rows = {}
    for side in (OFFICIAL, OURS):
        torch.manual_seed(0)
        step = build_official(src, cfg, batch, device, amp) \
            if side == OFFICIAL else build_ours(cfg, batch, device, amp)
        with contextlib.ExitStack() as stack:
            if side == OFFICIAL:  # msn_train.py sets it at import
                stack.enter_context(torch.backends.cudnn.flags(
                    enabled=torch.backends.cudnn.enabled, benchmark=True))
            rows[side] = measure(step, batch, device, args.repeats)
        del step
        gc.collect()
        if device.type == 'cuda':
            torch.cuda.empty_cache()
    ratio = rows[OURS]['images_per_s'] / rows[OFFICIAL]['images_per_s']
    views = ', '.join(f'{n}x{s}px' for n, s in view_groups(cfg))
    measured = ('synchronising CUDA calls (set_sync_debug_mode)'
                if device.type == 'cuda' else 'host reads (OpCounter)')
    lines = [
        f'{args.config}{" (narrowed)" if args.narrow else ""}',
        f'  device {device}, batch {batch}, views {views}, amp {args.amp}, '
        f'{args.repeats} timed steps per side',
        f'  {"step":14s} {"ms":>9s} {"img/s":>9s} {"peak MiB":>9s} '
        f'{"syncs":>6s}']
    for side, row in rows.items():
        peak = 'n/a' if row['peak_mib'] is None else f'{row["peak_mib"]:.0f}'
        lines.append(f'  {side:14s} {row["ms"]:9.2f} '
                     f'{row["images_per_s"]:9.1f} {peak:>9s} '
                     f'{row["syncs"]:6d}')
    lines += [
        f'  ratio (pmsn_mm img/s / official img/s): {ratio:.2f}x',
        '  official MSN: pre-made views on the device (its CPU workers '
        'draw them, not in the step); pmsn_mm: decoded batch, views drawn '
        'in the step', f'  syncs per step: {measured}']
    print('\n'.join(lines))
    return dict(rows=rows, ratio=ratio, batch=batch,
                views=view_groups(cfg))


if __name__ == '__main__':
    main()
