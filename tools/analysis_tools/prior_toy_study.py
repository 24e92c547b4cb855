"""Paper §5.1 / Fig. 3 study: which feature does each cluster prior keep?

Trains the given toy config once per (prior, seed) with mmengine's
Runner, then, for every run, measures on the toy set's two labels (the
power-law digit and the uniform background):

- weighted kNN top-1 (k = 20, T = 0.07; memory = the config's
  ``knn_train_dataset``, queries = ``knn_test_dataset``) on backbone CLS
  features and on projector (neck) features;
- NMI between the argmax prototype (online encoder, un-augmented memory
  images) and each label; argmax usage and p̄ against the prior;
- the same numbers for the untrained encoder (difficulty of each label);
- curves over training (every ``--eval-interval`` iterations, on a fixed
  subset of the memory images): mean per-anchor entropy vs entropy of p̄,
  sorted argmax usage of the online (anchor) and EMA-target encoders, NMI
  with each label, and a collapse indicator (std of the normalised
  embeddings times sqrt(D): 1 for isotropic, 0 for collapsed).

Priors: ``power-law`` and ``adaptive`` use the config's ``PowerLawPrior`` /
``AdaptivePowerLawPrior``; ``adaptive`` on a config with another prior uses
``AdaptivePowerLawPrior(num_prototypes=K)`` with its defaults; ``uniform``
replaces the config's prior. The fitted exponent of adaptive runs is
reported as ``prior_tau`` (final) and in the curves. Configs: PMSN (with or
without Sinkhorn) and PSwAV (``configs/pswav``; it has no EMA target, so its
"target" curves repeat the online encoder; ``--kl-directions`` must be
``forward``).

Writes ``<work-dir>/results.json``, ``table.md`` (mean ± std over seeds),
``curves_<prior>.png`` and a Figure-3 style ``fig3_<prior>.png`` (reference
test images and their nearest training neighbours on backbone features,
digit/background labels under each, green when the digit matches).

Examples:
    python tools/analysis_tools/prior_toy_study.py \\
        configs/pmsn/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py \\
        --seeds 0 1 2 --work-dir work_dirs/prior_toy_study
    # the learned exponent next to the fixed priors
    python tools/analysis_tools/prior_toy_study.py \\
        configs/pmsn/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py \\
        --priors power-law uniform adaptive --work-dir work_dirs/prior_adaptive
    # a quick check that the study runs (seconds; numbers meaningless)
    python tools/analysis_tools/prior_toy_study.py \\
        configs/pmsn/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py \\
        --quick --work-dir work_dirs/prior_toy_study_quick
    # paper scale on one GPU
    python tools/analysis_tools/prior_toy_study.py \\
        configs/pmsn/pmsn_vit-tiny-p4_1xb1024-300e_shapes-digits-power-law.py \\
        --device cuda --work-dir work_dirs/prior_toy_study_gpu
"""
import argparse
import copy
import json
import os
import os.path as osp
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np
from tqdm import tqdm

PRIORS = {
    'power-law': None,  # the config's PowerLawPrior (tau from the config)
    'uniform': dict(type='UniformPrior'),
    # the config's AdaptivePowerLawPrior, or one with default settings
    'adaptive': dict(type='AdaptivePowerLawPrior'),
}
KL_DIRECTIONS = ('forward', 'reverse')
LABELS = ('digit', 'background')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Power-law vs uniform prior on the toy set (paper Fig. 3)')
    parser.add_argument('config', help='PMSN toy config (power-law prior)')
    parser.add_argument(
        '--priors', nargs='+', default=['power-law', 'uniform'],
        choices=sorted(PRIORS), help='priors to compare')
    parser.add_argument(
        '--kl-directions', nargs='+', default=['forward'],
        choices=KL_DIRECTIONS,
        help="PMSNLoss kl_direction(s): 'forward' = KL(p̄‖prior) (paper), "
        "'reverse' = KL(prior‖p̄)")
    parser.add_argument('--seeds', nargs='+', type=int, default=[0, 1, 2])
    parser.add_argument(
        '--work-dir', default='work_dirs/prior_toy_study',
        help='where runs, tables and figures go')
    parser.add_argument(
        '--device', default='cpu', choices=['cpu', 'cuda'],
        help='train and evaluate on this device')
    parser.add_argument(
        '--max-iters', type=int, default=None,
        help='override the schedule length (iterations; schedules scale)')
    parser.add_argument(
        '--eval-interval', type=int, default=None,
        help='iterations between curve points (default: 10 points a run)')
    parser.add_argument(
        '--curve-samples', type=int, default=2000,
        help='memory images used for the curves')
    parser.add_argument('--k', type=int, default=20, help='kNN neighbours')
    parser.add_argument(
        '--num-refs', type=int, default=8, help='Fig. 3 reference images')
    parser.add_argument(
        '--num-neighbors', type=int, default=8, help='Fig. 3 neighbours')
    parser.add_argument(
        '--cfg-options', nargs='+', default=None, metavar='KEY=VALUE',
        help='override config settings (mmengine syntax)')
    parser.add_argument(
        '--data-options', nargs='+', default=None, metavar='KEY=VALUE',
        help='toy-set settings applied to the training set and to the kNN '
        "memory and query sets alike, e.g. digit_size=12 "
        'background_source=noise shape_options.max_angle=0')
    parser.add_argument(
        '--quick',
        action='store_true',
        help='a quick check that the study runs (seconds, numbers '
        f'meaningless): the first seed only, {QUICK_ITERS} iterations, '
        f'{QUICK_SAMPLES} images in each toy set, {QUICK_REFS} Fig. 3 '
        'references with 3 neighbours; explicit --max-iters / '
        '--data-options num_samples=N win')
    args = parser.parse_args(argv)
    if args.quick:
        apply_quick(args)
    return args


#: ``--quick``: iterations, images per toy set, Fig. 3 reference images.
QUICK_ITERS = 2
QUICK_SAMPLES = 128
QUICK_REFS = 2


def apply_quick(args: argparse.Namespace) -> None:
    """Turn the parsed arguments into the ``--quick`` check, in place.

    Args:
        args: Output of the parser, with ``quick`` set.
    """
    args.seeds = args.seeds[:1]
    if args.max_iters is None:
        args.max_iters = QUICK_ITERS
    options = list(args.data_options or [])
    if not any(o.startswith('num_samples=') for o in options):
        options.insert(0, f'num_samples={QUICK_SAMPLES}')
    args.data_options = options
    args.curve_samples = min(args.curve_samples, QUICK_SAMPLES)
    args.num_refs = min(args.num_refs, QUICK_REFS)
    args.num_neighbors = min(args.num_neighbors, 3)


# ------------------------------------------------------------------ helpers
def nmi(a: np.ndarray, b: np.ndarray) -> float:
    """Normalised mutual information (arithmetic mean normalisation)."""
    from sklearn.metrics import normalized_mutual_info_score
    return float(normalized_mutual_info_score(a, b))


def mean_std(values: Sequence[float]) -> str:
    values = np.asarray(values, dtype=np.float64)
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    return f'{values.mean():.3g} ± {std:.2g}'


def run_name(prior: str, direction: str) -> str:
    return prior if direction == 'forward' else f'{prior}-reverse-kl'


def make_config(args: argparse.Namespace, prior: str, direction: str,
                seed: int):
    from mmengine.config import Config
    cfg = Config.fromfile(args.config)
    if args.cfg_options:
        from mmengine.config import DictAction
        opts = argparse.ArgumentParser()
        opts.add_argument('--o', nargs='+', action=DictAction)
        cfg.merge_from_dict(opts.parse_args(['--o', *args.cfg_options]).o)
    if args.data_options:
        apply_data_options(cfg, args.data_options)
    if args.max_iters is not None:
        scale_schedule(cfg, args.max_iters)
    loss = cfg.model.head.loss
    holder = cfg.model.head  # PMSNHead or PSwAVHead: both own the prior
    own = holder.get('prior', {}).get('type')
    if prior == 'adaptive' and own != 'AdaptivePowerLawPrior':
        holder.prior = copy.deepcopy(PRIORS[prior])
    elif prior not in ('power-law', 'adaptive'):
        holder.prior = copy.deepcopy(PRIORS[prior])
    elif prior == 'power-law' and own != 'PowerLawPrior':
        raise ValueError(
            f'--priors power-law uses the config\'s prior, but {args.config} '
            f'has {holder.get("prior")}; pass a PowerLawPrior config.')
    if direction != 'forward':
        if loss.type != 'PMSNLoss':
            raise ValueError(f'--kl-directions {direction} needs a PMSN '
                             f'config, but the loss is {loss.type}.')
        loss.kl_direction = direction
    cfg.randomness = dict(seed=seed, deterministic=False)
    cfg.work_dir = osp.join(args.work_dir, run_name(prior, direction),
                            f'seed{seed}')
    # mmengine names the run's logger and visualizer "<name>_<timestamp>":
    # without the prior and seed, two runs started within the same second
    # (short --quick / --max-iters runs) would share them
    stem = osp.splitext(osp.basename(args.config))[0]
    cfg.experiment_name = f'{stem}_{run_name(prior, direction)}_seed{seed}'
    return cfg


#: Where the toy job keeps its datasets: training, kNN memory and queries
#: (top-level, read by this tool) and the val loop's copies of the latter.
DATASET_KEYS = ('train_dataloader.dataset', 'knn_train_dataset',
                'knn_test_dataset', 'val_dataloader.dataset.memory',
                'val_dataloader.dataset.query')


def apply_data_options(cfg, options: Sequence[str]) -> None:
    """Set the same dataset options on every toy dataset of ``cfg``."""
    from mmengine.config import DictAction
    opts = argparse.ArgumentParser()
    opts.add_argument('--o', nargs='+', action=DictAction)
    values = opts.parse_args(['--o', *options]).o
    present = []
    for key in DATASET_KEYS:
        node = cfg
        for part in key.split('.'):
            node = node.get(part) if node is not None else None
        if node is not None:
            present.append(key)
    if 'train_dataloader.dataset' not in present:
        raise ValueError('--data-options needs a config with '
                         'train_dataloader.dataset (the toy set).')
    cfg.merge_from_dict({
        f'{key}.{name}': value
        for key in present for name, value in values.items()
    })


def scale_schedule(cfg, max_iters: int) -> None:
    """Shorten/lengthen an iteration-based schedule to ``max_iters``: the
    param schedulers, a learned prior's ``warmup_updates`` and SwAVHook's
    prototype freezing (iterations)."""
    old = cfg.train_cfg.max_iters
    ratio = max_iters / old
    cfg.train_cfg.max_iters = max_iters
    for sched in cfg.param_scheduler:
        if 'begin' in sched:
            sched['begin'] = int(round(sched['begin'] * ratio))
        if 'end' in sched:
            sched['end'] = max(
                sched.get('begin', 0) + 1, int(round(sched['end'] * ratio)))
        if 'T_max' in sched:
            sched['T_max'] = max(1, int(round(sched['T_max'] * ratio)))
    ckpt = cfg.default_hooks.get('checkpoint')
    if ckpt is not None:
        ckpt['interval'] = max_iters
    prior = cfg.model.head.get('prior') or {}
    if prior.get('warmup_updates'):
        prior['warmup_updates'] = int(round(prior['warmup_updates'] * ratio))
    for hook in cfg.get('custom_hooks', None) or []:
        frozen = hook.get('frozen_layers_cfg') or {}
        for name, iters in frozen.items():
            frozen[name] = int(round(iters * ratio))


# ------------------------------------------------------------- evaluation
class _Probe:
    """Embeddings, prototype probabilities and the prior of one model state
    (through the model's own ``embed``: every stage in one forward)."""

    def __init__(self, model, batch_size: int = 500) -> None:
        self.model = model
        self.batch_size = batch_size

    def encode(self, images, target: bool = False):
        """``{'backbone', 'neck', 'probs'}`` of normalised images, on the
        CPU; ``target`` uses the EMA target encoder when the model has one
        (PMSN), else the online one (PSwAV)."""
        import torch
        target = target and hasattr(self.model, 'target_net')
        outs = [
            self.model.embed(images[s:s + self.batch_size], target=target)
            for s in range(0, len(images), self.batch_size)
        ]
        return {
            k: torch.cat([o[k] for o in outs]).float().cpu()
            for k in outs[0]
        }

    def prior(self):
        return self.model.head.prior.probs.detach().double().cpu()

    def prior_tau(self) -> Optional[float]:
        """The exponent of a (fixed or learned) power-law prior, else None.
        """
        tau = getattr(self.model.head.prior, 'tau', None)
        return None if tau is None else float(tau)


def dataset_tensor(dataset, preprocessor, device):
    """All images of a toy dataset, normalised, and its two labels."""
    import torch
    images = torch.from_numpy(np.ascontiguousarray(dataset._images))
    images = images[:, None].float()
    if dataset.channels == 3:
        images = images.repeat(1, 3, 1, 1)
    images = images.to(device)
    if preprocessor._enable_normalize:
        images = (images - preprocessor.mean) / preprocessor.std
    # nuisance check: decile of the mean grey level of the raw image
    brightness = dataset._images.reshape(len(dataset), -1).mean(axis=1)
    labels = dict(
        digit=np.asarray(dataset.get_digit_labels()),
        background=np.asarray(dataset.get_background_labels()),
        brightness=np.searchsorted(
            np.quantile(brightness, np.linspace(0.1, 0.9, 9)), brightness))
    return images, labels


def assignment_stats(probs, prior, labels: Dict[str, np.ndarray]) -> dict:
    """NMI of argmax assignments, usage, p̄ and entropies."""
    import torch
    from pmsn_mm.models.utils import entropy, kl_divergence
    probs = probs.double().cpu()
    argmax = probs.argmax(dim=1).numpy()
    usage = np.bincount(argmax, minlength=probs.shape[1]) / len(argmax)
    mean_probs = probs.mean(dim=0)
    prior = prior.double().cpu()
    out = {f'nmi_{k}': nmi(argmax, v) for k, v in labels.items()}
    out.update(
        usage_sorted=sorted(usage.tolist(), reverse=True),
        mean_probs_sorted=sorted(mean_probs.tolist(), reverse=True),
        prior_sorted=sorted(prior.tolist(), reverse=True),
        num_used=int((usage > 0).sum()),
        mean_anchor_entropy=float(entropy(probs).mean()),
        mean_probs_entropy=float(entropy(mean_probs)),
        kl_mean_probs_prior=float(kl_divergence(mean_probs, prior)),
        kl_usage_prior=float(
            kl_divergence(torch.as_tensor(np.sort(usage)[::-1].copy()),
                          prior.sort(descending=True).values)))
    return out


def collapse_indicator(emb) -> float:
    """std over samples of L2-normalised embeddings, times sqrt(D)."""
    import torch.nn.functional as F
    z = F.normalize(emb.double(), dim=1)
    return float(z.std(dim=0).mean() * z.shape[1]**0.5)


def evaluate(model, memory, queries, k: int) -> dict:
    """Final kNN / NMI / usage numbers of one model (eval mode)."""
    import torch
    from pmsn_mm.evaluation.functional import knn_top1
    probe = _Probe(model)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        mem = probe.encode(memory[0])
        qry = probe.encode(queries[0])
        out = {}
        for stage in ('backbone', 'neck'):
            for label in LABELS:
                out[f'knn_{label}_{stage}'] = knn_top1(
                    mem[stage], torch.as_tensor(memory[1][label]),
                    qry[stage], torch.as_tensor(queries[1][label]), k)
        out.update(assignment_stats(mem['probs'], probe.prior(), memory[1]))
        out['collapse_indicator'] = collapse_indicator(mem['neck'])
        if probe.prior_tau() is not None:
            out['prior_tau'] = probe.prior_tau()
    model.train(was_training)
    return out, mem['backbone'], qry['backbone']


def curve_point(model, images, labels, iteration: int) -> dict:
    """Diagnostics over training on a fixed set of un-augmented images."""
    import torch
    probe = _Probe(model)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        prior = probe.prior()
        online_emb = probe.encode(images)
        online = assignment_stats(online_emb['probs'], prior, labels)
        target = assignment_stats(
            probe.encode(images, target=True)['probs'], prior, labels)
    model.train(was_training)
    point = dict(prior_tau=probe.prior_tau()) \
        if probe.prior_tau() is not None else {}
    return dict(
        point,
        iter=iteration,
        nmi_digit=online['nmi_digit'],
        nmi_background=online['nmi_background'],
        nmi_brightness=online['nmi_brightness'],
        target_nmi_digit=target['nmi_digit'],
        target_nmi_background=target['nmi_background'],
        mean_anchor_entropy=online['mean_anchor_entropy'],
        mean_probs_entropy=online['mean_probs_entropy'],
        kl_mean_probs_prior=online['kl_mean_probs_prior'],
        anchor_usage_sorted=online['usage_sorted'],
        target_usage_sorted=target['usage_sorted'],
        num_used_anchor=online['num_used'],
        num_used_target=target['num_used'],
        collapse_indicator=collapse_indicator(online_emb['neck']))


def make_curve_hook(images, labels, interval: int, curve: list):
    from mmengine.hooks import Hook
    from mmpretrain.utils import get_ori_model

    class _CurveHook(Hook):
        priority = 'LOW'

        def _point(self, runner, iteration):
            model = get_ori_model(runner.model)
            point = curve_point(model, images, labels, iteration)
            curve.append(point)
            runner.logger.info(
                f'[curve] iter {iteration}: NMI digit '
                f'{point["nmi_digit"]:.3f} background '
                f'{point["nmi_background"]:.3f} brightness '
                f'{point["nmi_brightness"]:.3f}, H(p_i) '
                f'{point["mean_anchor_entropy"]:.3f}, H(p̄) '
                f'{point["mean_probs_entropy"]:.3f}, used '
                f'{point["num_used_anchor"]}/{point["num_used_target"]}')

        def before_train(self, runner):
            self._point(runner, 0)

        def after_train_iter(self, runner, batch_idx, data_batch=None,
                             outputs=None):
            if self.every_n_train_iters(runner, interval):
                self._point(runner, runner.iter + 1)

    return _CurveHook()


# ------------------------------------------------------------- reporting
def summarise(results: Dict[str, List[dict]]) -> str:
    cols = [('knn_digit_backbone', 'digit kNN (CLS)'),
            ('knn_background_backbone', 'background kNN (CLS)'),
            ('knn_digit_neck', 'digit kNN (proj.)'),
            ('knn_background_neck', 'background kNN (proj.)'),
            ('nmi_digit', 'NMI digit'), ('nmi_background', 'NMI background'),
            ('nmi_brightness', 'NMI brightness'),
            ('kl_mean_probs_prior', 'KL(p̄‖prior)'),
            ('mean_anchor_entropy', 'mean H(p_i)'),
            ('mean_probs_entropy', 'H(p̄)'), ('prior_tau', 'prior tau')]
    lines = ['| run | seeds | ' + ' | '.join(c[1] for c in cols) + ' |',
             '|' + ' --- |' * (len(cols) + 2)]
    for name, runs in results.items():
        cells = [
            mean_std([r[key] for r in runs]) if all(key in r
                                                    for r in runs) else '–'
            for key, _ in cols
        ]
        lines.append(f'| {name} | {len(runs)} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def plot_curves(curves: Dict[int, list], out_file: str, title: str) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12, 3.2), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 4)
    for seed, curve in curves.items():
        it = [p['iter'] for p in curve]
        axes[0].plot(it, [p['nmi_digit'] for p in curve], 'b-',
                     label='digit' if seed == min(curves) else None)
        axes[0].plot(it, [p['nmi_background'] for p in curve], 'r-',
                     label='background' if seed == min(curves) else None)
        axes[1].plot(it, [p['mean_anchor_entropy'] for p in curve], 'g-',
                     label='mean H(p_i)' if seed == min(curves) else None)
        axes[1].plot(it, [p['mean_probs_entropy'] for p in curve], 'k-',
                     label='H(p̄)' if seed == min(curves) else None)
        axes[2].plot(it, [p['num_used_anchor'] for p in curve], 'g-',
                     label='online' if seed == min(curves) else None)
        axes[2].plot(it, [p['num_used_target'] for p in curve], 'm--',
                     label='EMA target' if seed == min(curves) else None)
        axes[3].plot(it, [p['collapse_indicator'] for p in curve], 'k-')
    for ax, name in zip(axes, ('NMI(argmax prototype, label)',
                               'entropies (nats)', 'prototypes used (argmax)',
                               'collapse indicator (1 = isotropic)')):
        ax.set_title(name, fontsize=9)
        ax.set_xlabel('iteration', fontsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out_file)


def save_fig3(dataset_mem, dataset_qry, mem_feats, qry_feats, out_file: str,
              title: str, num_refs: int, num_neighbors: int) -> str:
    """Reference test images (one per digit class, most frequent first) and
    their nearest training images on backbone features."""
    import torch
    import torch.nn.functional as F
    from pmsn_mm.visualization import save_image_grid
    qd = np.asarray(dataset_qry.get_digit_labels())
    qb = np.asarray(dataset_qry.get_background_labels())
    md = np.asarray(dataset_mem.get_digit_labels())
    mb = np.asarray(dataset_mem.get_background_labels())
    refs = [int(np.flatnonzero(qd == d)[0]) for d in range(10)
            if (qd == d).any()][:num_refs]
    sim = F.normalize(qry_feats[refs].float(), dim=1) @ F.normalize(
        mem_feats.float(), dim=1).T
    nbrs = sim.topk(num_neighbors, dim=1).indices.numpy()

    def img(ds, i):
        x = ds._images[i]
        return np.repeat(x[..., None], 3, axis=-1)

    bg_names = dataset_mem.background_classes
    rows, titles, colors = [], [], []
    for r, q in enumerate(refs):
        rows.append([img(dataset_qry, q)] +
                    [img(dataset_mem, j) for j in nbrs[r]])
        titles.append([f'digit {qd[q]}\n{bg_names[qb[q]]}'] + [
            f'digit {md[j]}\n{bg_names[mb[j]]}' for j in nbrs[r]])
        colors.append(['black'] + [
            'green' if md[j] == qd[q] else 'red' for j in nbrs[r]])
    legend = [('query image (first column)', 'black'),
              ('training neighbour, same digit', 'green'),
              ('training neighbour, another digit', 'red')]
    return save_image_grid(
        rows, out_file, cell_titles=titles, cell_colors=colors, title=title,
        cell_inches=1.0, legend=legend,
        col_titles=['query'] + [f'#{j}' for j in range(1, num_neighbors + 1)])


# ------------------------------------------------------------------ main
def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    if args.device == 'cpu':
        os.environ['CUDA_VISIBLE_DEVICES'] = ''
    import torch
    from mmengine.registry import init_default_scope
    from mmengine.runner import Runner

    import pmsn_mm  # noqa: F401
    from pmsn_mm.apis import build_dataset
    if args.device == 'cuda' and not torch.cuda.is_available():
        sys.exit('--device cuda: no CUDA device is available.')
    device = torch.device(args.device)
    os.makedirs(args.work_dir, exist_ok=True)
    init_default_scope('mmpretrain')

    base = make_config(args, 'power-law' if 'power-law' in args.priors else
                       args.priors[0], 'forward', args.seeds[0])
    mem_ds = build_dataset(base.knn_train_dataset)
    qry_ds = build_dataset(base.knn_test_dataset)

    results: Dict[str, List[dict]] = {}
    summary = dict(config=args.config, seeds=args.seeds, runs={})
    # the study's progress and ETA over its trainings (each training logs
    # its own iterations through mmengine)
    progress = tqdm(total=len(args.kl_directions) * len(args.priors) *
                    len(args.seeds), desc='toy study', unit='run')
    for direction in args.kl_directions:
        for prior in args.priors:
            name = run_name(prior, direction)
            curves = {}
            for seed in args.seeds:
                progress.set_postfix_str(f'{name} seed {seed}')
                cfg = make_config(args, prior, direction, seed)
                runner = Runner.from_cfg(cfg)
                model = runner.model
                memory = dataset_tensor(mem_ds, model.data_preprocessor,
                                        device)
                queries = dataset_tensor(qry_ds, model.data_preprocessor,
                                         device)
                n = min(args.curve_samples, len(memory[0]))
                curve: list = []
                interval = args.eval_interval or max(
                    1, cfg.train_cfg.max_iters // 10)
                runner.register_hook(
                    make_curve_hook(memory[0][:n], {
                        k: v[:n] for k, v in memory[1].items()
                    }, interval, curve))
                if (direction, prior) == (args.kl_directions[0],
                                          args.priors[0]):
                    # difficulty of each label: the encoder at initialisation
                    untrained, _, _ = evaluate(model, memory, queries, args.k)
                    untrained.pop('prior_tau', None)  # no prior trained yet
                    untrained.update(seed=seed)
                    results.setdefault('untrained encoder',
                                       []).append(untrained)
                start = time.time()
                runner.train()
                wall = time.time() - start
                metrics, mem_b, qry_b = evaluate(model, memory, queries,
                                                 args.k)
                metrics.update(seed=seed, prior=prior, kl_direction=direction,
                               train_seconds=wall, curve=curve)
                results.setdefault(name, []).append(metrics)
                curves[seed] = curve
                with open(osp.join(cfg.work_dir, 'metrics.json'), 'w') as f:
                    json.dump(metrics, f, indent=1)
                tau = (f', prior tau {metrics["prior_tau"]:.3f}'
                       if 'prior_tau' in metrics else '')
                runner.logger.info(
                    f'[{name} seed {seed}] {wall:.0f}s: digit kNN '
                    f'{metrics["knn_digit_backbone"]:.1f}% background kNN '
                    f'{metrics["knn_background_backbone"]:.1f}%, NMI digit '
                    f'{metrics["nmi_digit"]:.3f} background '
                    f'{metrics["nmi_background"]:.3f}{tau}')
                if seed == args.seeds[0]:
                    save_fig3(
                        mem_ds, qry_ds, mem_b, qry_b,
                        osp.join(args.work_dir, f'fig3_{name}.png'),
                        f'{name} prior, seed {seed}: nearest neighbours '
                        '(green = same digit)', args.num_refs,
                        args.num_neighbors)
                del runner
                progress.update()
            plot_curves(curves, osp.join(args.work_dir, f'curves_{name}.png'),
                        f'{name} prior ({len(curves)} seeds)')
    progress.close()
    table = summarise(results)
    summary['runs'] = results
    summary['table'] = table
    with open(osp.join(args.work_dir, 'results.json'), 'w') as f:
        json.dump(summary, f, indent=1)
    with open(osp.join(args.work_dir, 'table.md'), 'w') as f:
        f.write(table + '\n')
    print(table)
    return summary


if __name__ == '__main__':
    main()
