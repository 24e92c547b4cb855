"""Paper Fig. 3: nearest neighbours of reference images in embedding space.

For a config + checkpoint, extracts backbone features of a dataset (default:
the query split of the config's kNN evaluation, else the ``test`` split of
its training dataset), finds each sample's k cosine nearest neighbours (itself
excluded) and writes

- ``nearest_neighbors.png``: one row per reference image (first column),
  then its neighbours nearest first, each captioned with its labels spelled
  out (``digit 5`` / ``background 9``), green where the neighbour shares
  the reference's first label (e.g. the digit), red where not; a legend
  under the grid says so;
- ``nearest_neighbors.json``: for every label (``digit`` / ``background``
  on the toy set), the fraction of (sample, neighbour) pairs over the whole
  dataset that share it, next to the fraction expected by chance.

Examples:
    python tools/analysis_tools/nearest_neighbors.py CONFIG CHECKPOINT \\
        --out-dir work_dirs/fig3 --k 8 --num-refs 8
"""
import argparse
import json
import os
import os.path as osp
import sys
from typing import Dict, List, Optional

import numpy as np
from mmengine.config import Config, DictAction
from mmpretrain.apis import get_model

from pmsn_mm.config import check_config
from pmsn_mm.evaluation import extract_features

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from config_datasets import (build_dataset, dataset_config, dataset_labels,
                             load_image)
from fit_threads import fit_threads_once
from neighbor_agreement import chance_agreement, cosine_knn, neighbor_agreement
from neighbor_grid import save_neighbor_grid


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Nearest neighbours in embedding space (paper Fig. 3)')
    parser.add_argument('config', help='training config')
    parser.add_argument('checkpoint', help='checkpoint of that config')
    parser.add_argument(
        '--out-dir',
        default='work_dirs/nearest_neighbors',
        help='folder for the PNG and JSON')
    parser.add_argument(
        '--split',
        choices=['train', 'test'],
        help='use this split of the training dataset (default: the kNN '
        "evaluation's query dataset, else the test split)")
    parser.add_argument(
        '--num-samples',
        type=int,
        help='keep only the first N samples of the dataset')
    parser.add_argument('--k', type=int, default=8, help='neighbours per row')
    parser.add_argument(
        '--num-refs', type=int, default=8, help='reference images (rows)')
    parser.add_argument(
        '--seed', type=int, default=0, help='seed of the reference choice')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--device', default='cpu')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override config settings')
    return parser.parse_args(argv)


def _caption(labels: Dict[str, np.ndarray], i: int) -> str:
    """One line per label, spelled out (``digit 5`` / ``background 9``)."""
    return '\n'.join(f'{k.replace("gt_label", "class")} {int(v[i])}'
                     for k, v in labels.items())


def main(argv: Optional[List[str]] = None) -> Dict:
    """Run the tool; returns the report that is also saved as JSON."""
    args = parse_args(argv)
    cfg = Config.fromfile(args.config)
    cfg.merge_from_dict(args.cfg_options or {})
    check_config(cfg)  # misspelled types and keys, one owner per number
    if str(args.device).startswith('cpu'):  # a fair share of a busy CPU
        print(fit_threads_once() or '', flush=True)
    model = get_model(cfg, pretrained=args.checkpoint, device=args.device)
    ds_cfg = dataset_config(cfg, args.split, args.num_samples, 'test')
    dataset = build_dataset(ds_cfg)
    labels = dataset_labels(dataset)
    feats, _ = extract_features(model, dataset, 'backbone',
                                batch_size=args.batch_size, progress=True)
    neighbors = cosine_knn(feats, args.k)

    report = dict(
        config=args.config,
        checkpoint=args.checkpoint,
        num_samples=len(dataset),
        k=args.k,
        agreement={
            key: neighbor_agreement(neighbors, value)
            for key, value in labels.items()
        },
        chance={
            key: chance_agreement(value)
            for key, value in labels.items()
        })

    rng = np.random.default_rng(args.seed)
    refs = rng.choice(
        len(dataset), min(args.num_refs, len(dataset)), replace=False)
    first = next(iter(labels.values()), None)  # the compared label
    rows, captions, same = [], [], []
    for r in refs:
        idx = [int(r)] + neighbors[r].tolist()
        rows.append([load_image(dataset, i) for i in idx])
        captions.append([_caption(labels, i) for i in idx])
        same.append([first is not None and first[i] == first[r]
                     for i in idx[1:]])
    report['references'] = [int(r) for r in refs]
    report['neighbors'] = [neighbors[r].tolist() for r in refs]

    os.makedirs(args.out_dir, exist_ok=True)
    png = osp.join(args.out_dir, 'nearest_neighbors.png')
    agree = ', '.join(f'{k} {v:.2f} (chance {report["chance"][k]:.2f})'
                      for k, v in report['agreement'].items())
    save_neighbor_grid(
        rows, captions, same if first is not None else None, png,
        title=f'{args.k} nearest neighbours (cosine, backbone features); '
        f'same label: {agree}',
        label=next(iter(labels), 'gt_label').replace('gt_label', 'class'))
    report['png'] = png
    with open(osp.join(args.out_dir, 'nearest_neighbors.json'), 'w') as f:
        json.dump(report, f, indent=2)
    print(f'{len(dataset)} samples, k={args.k}; fraction of neighbours '
          f'sharing the label: {agree}')
    print(f'figure: {png}')
    return report


if __name__ == '__main__':
    main()
