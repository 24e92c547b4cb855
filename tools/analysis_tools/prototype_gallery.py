"""Prototype gallery: the training images each prototype is most probable for.

A cheap stand-in for the RCDM prototype images of paper Figs. 2/4 (RCDM
needs a GPU-trained diffusion model and is out of scope). Embeds training
images with the online backbone + neck, takes the head's prototype
probabilities (as in the loss: its temperature and label smoothing) and
writes

- ``prototype_gallery.png``: one row per prototype (most used first), its
  ``--top-n`` most probable images, captioned with the probability;
- ``prototype_usage.json``: usage counts (how many images have each
  prototype as argmax) and the gallery's image indices; the counts are also
  printed.

Examples:
    python tools/analysis_tools/prototype_gallery.py CONFIG CHECKPOINT \\
        --out-dir work_dirs/gallery --top-n 8 --num-samples 2000
"""
import argparse
import json
import os
import os.path as osp
import sys
from typing import Dict, List, Optional

from mmengine.config import Config, DictAction
from mmpretrain.apis import get_model
from torch import Tensor

from pmsn_mm.config import check_config
from pmsn_mm.evaluation import extract_features
from pmsn_mm.evaluation.functional import usage_counts

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from config_datasets import build_dataset, dataset_config, load_image
from fit_threads import fit_threads_once
from image_grid import save_image_grid


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Most probable training images per prototype '
        '(stand-in for paper Figs. 2/4)')
    parser.add_argument('config', help='training config')
    parser.add_argument('checkpoint', help='checkpoint of that config')
    parser.add_argument(
        '--out-dir',
        default='work_dirs/prototype_gallery',
        help='folder for the PNG and JSON')
    parser.add_argument(
        '--split',
        choices=['train', 'test'],
        help='use this split of the training dataset (default: the kNN '
        "evaluation's memory dataset, else the train split)")
    parser.add_argument(
        '--num-samples',
        type=int,
        help='keep only the first N samples of the dataset')
    parser.add_argument(
        '--top-n', type=int, default=8, help='images per prototype')
    parser.add_argument(
        '--max-prototypes',
        type=int,
        default=32,
        help='rows to draw (the most used prototypes)')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--device', default='cpu')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override config settings')
    return parser.parse_args(argv)


def top_samples_per_prototype(probs: Tensor, num: int) -> Tensor:
    """For each prototype k, the ``num`` samples with the highest ``p_k``.

    Args:
        probs: Tensor of shape (N, K).
        num: Samples per prototype (clipped to N).

    Returns:
        Long tensor of shape (K, min(num, N)), most probable first.
    """
    return probs.T.topk(min(num, probs.shape[0]), dim=1).indices


def main(argv: Optional[List[str]] = None) -> Dict:
    """Run the tool; returns the report that is also saved as JSON."""
    args = parse_args(argv)
    cfg = Config.fromfile(args.config)
    cfg.merge_from_dict(args.cfg_options or {})
    check_config(cfg)  # misspelled types and keys, one owner per number
    if str(args.device).startswith('cpu'):  # a fair share of a busy CPU
        print(fit_threads_once() or '', flush=True)
    model = get_model(cfg, pretrained=args.checkpoint, device=args.device)
    if not hasattr(model, 'embed'):
        raise ValueError(f'{type(model).__name__} has no prototype stages; '
                         'the gallery needs a prototype model such as PMSN '
                         'or PSwAV.')
    ds_cfg = dataset_config(cfg, args.split, args.num_samples, 'train')
    dataset = build_dataset(ds_cfg)
    probs, _ = extract_features(model, dataset, 'probs',
                                batch_size=args.batch_size,
                                progress=True)
    counts = usage_counts(probs)
    top = top_samples_per_prototype(probs, args.top_n)
    # most used first; ties by index
    order = sorted(range(len(counts)), key=lambda k: (-counts[k], k))
    shown = order[:args.max_prototypes]

    rows, captions, row_titles = [], [], []
    for k in shown:
        rows.append([load_image(dataset, int(i)) for i in top[k]])
        captions.append([f'{float(probs[i, k]):.2f}' for i in top[k]])
        row_titles.append(f'#{k} n={int(counts[k])}')
    os.makedirs(args.out_dir, exist_ok=True)
    png = osp.join(args.out_dir, 'prototype_gallery.png')
    save_image_grid(
        rows,
        png,
        row_titles=row_titles,
        cell_titles=captions,
        title=f'Top-{args.top_n} images per prototype ({len(dataset)} '
        f'images; n = argmax count)')

    report = dict(
        config=args.config,
        checkpoint=args.checkpoint,
        num_samples=len(dataset),
        num_prototypes=len(counts),
        num_used=int((counts > 0).sum()),
        usage_counts=counts.tolist(),
        usage_fraction=(counts / max(counts.sum(), 1)).tolist(),
        gallery={int(k): top[k].tolist()
                 for k in shown},
        png=png)
    with open(osp.join(args.out_dir, 'prototype_usage.json'), 'w') as f:
        json.dump(report, f, indent=2)
    print(f'usage counts (argmax over {len(dataset)} images, '
          f'{report["num_used"]}/{len(counts)} prototypes used):')
    for k in order:
        print(f'  prototype {k:4d}: {int(counts[k]):6d} '
              f'({counts[k] / max(counts.sum(), 1):.3f})')
    print(f'figure: {png}')
    return report


if __name__ == '__main__':
    main()
