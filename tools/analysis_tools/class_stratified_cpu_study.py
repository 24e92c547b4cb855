"""Paper §4 / Table 1 on CPU: class-balanced minus class-imbalanced k-NN.

Trains every config of ``configs/class_stratified/cpu_study`` (SimCLR,
VICReg, MSN, MAE, data2vec; each with K = 10 and K = 2 background classes
per batch) one after the other with ``tools/train.py``, then prints, per
method, the k-NN top-1 on the digit and background labels of both runs and
their difference (balanced - imbalanced; the paper's Table 1 convention).
The accuracies are the configs' kNN val loop at the last iteration, read
back from the run's ``<timestamp>/vis_data/scalars.json``. The table is also
written to ``<work-dir>/summary.json``. A run that has them is not repeated
unless ``--rerun``.

``--quick`` checks that the study runs (numbers meaningless; each config
is its own ``tools/train.py`` process, about 20 s of CPU, timings in
docs/class_stratified.md): every run is 2 iterations of batch 20 on 200
images (:data:`QUICK_OPTIONS`, passed to ``tools/train.py --cfg-options``),
kept in ``<work-dir>/quick`` so that they never stand in for full runs.

Examples:
    python tools/analysis_tools/class_stratified_cpu_study.py
    python tools/analysis_tools/class_stratified_cpu_study.py --quick
    python tools/analysis_tools/class_stratified_cpu_study.py \
        --methods vicreg data2vec --work-dir work_dirs/study
"""
import argparse
import glob
import json
import os
import os.path as osp
import re
import subprocess
import sys
from typing import Dict, List, Optional

from tqdm import tqdm

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(REPO, 'configs', 'class_stratified', 'cpu_study')
LABELS = ('digit_label', 'background_label')
#: The methods of the paper's Table 1 (the folder also holds PMSN variants).
METHODS = ('simclr', 'vicreg', 'msn', 'mae', 'data2vec')
#: The val loop's metric for each label (the configs' KNNAccuracy prefixes).
METRICS = {
    'digit_label': 'knn_digit/top1',
    'background_label': 'knn_background/top1'
}
#: ``--quick``: 2 iterations of batch 20, kNN evaluated at the second, on
#: 200 training images (enough for K = 2 classes x 10 images without
#: replacement), 100 memory and 50 query images.
QUICK_OPTIONS = ('train_cfg.max_iters=2', 'train_cfg.val_interval=2',
                 'train_dataloader.batch_size=20',
                 'train_dataloader.dataset.num_samples=200',
                 'val_dataloader.dataset.memory.num_samples=100',
                 'val_dataloader.dataset.query.num_samples=50')


def study_configs(config_dir: str = CONFIG_DIR) -> Dict[str, Dict[str, str]]:
    """``{method: {'balanced': path, 'imbalanced': path}}`` of a folder, for
    the methods of :data:`METHODS`.

    Args:
        config_dir: Folder with ``{method}_..._class-{im,}balanced-k{K}_...``
            configs.
    """
    found: Dict[str, Dict[str, str]] = {}
    for path in sorted(glob.glob(osp.join(config_dir, '*.py'))):
        match = re.search(r'class-(balanced|imbalanced)-k\d+', path)
        method = osp.basename(path).split('_')[0]
        if match and method in METHODS:
            found.setdefault(method, {})[match.group(1)] = path
    return found


def read_knn(work_dir: str) -> Optional[Dict[str, float]]:
    """The last kNN evaluation of a run, ``{label: top-1 %}``.

    Read from the newest ``<work_dir>/<timestamp>/vis_data/scalars.json``
    (mmengine's ``LocalVisBackend``) that has a line with every metric of
    :data:`METRICS`; None when no run logged them.

    Args:
        work_dir: The run's work dir.
    """
    pattern = osp.join(work_dir, '*', 'vis_data', 'scalars.json')
    for path in sorted(glob.glob(pattern), reverse=True):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        for row in reversed(rows):
            if all(metric in row for metric in METRICS.values()):
                return {label: float(row[metric])
                        for label, metric in METRICS.items()}
    return None


def summarize(results: Dict[str, Dict[str, Dict[str, float]]]) -> List[Dict]:
    """One row per method: accuracies of both variants and their difference.

    Args:
        results: ``{method: {'balanced': knn, 'imbalanced': knn}}`` with
            ``knn`` from :func:`read_knn`; missing runs are skipped.

    Returns:
        Rows ``{'method', '<label>_balanced', '<label>_imbalanced',
        '<label>_delta'}`` for every label of :data:`LABELS`.
    """
    rows = []
    for method, runs in sorted(results.items()):
        if not {'balanced', 'imbalanced'} <= set(runs):
            continue
        row = dict(method=method)
        for label in LABELS:
            bal, imb = runs['balanced'][label], runs['imbalanced'][label]
            row[f'{label}_balanced'] = bal
            row[f'{label}_imbalanced'] = imb
            row[f'{label}_delta'] = bal - imb
        rows.append(row)
    return rows


def format_table(rows: List[Dict]) -> str:
    """A Markdown table of :func:`summarize` rows."""
    head = ['method'] + [f'{label.split("_")[0]} {col}' for label in LABELS
                         for col in ('K=10', 'K=2', 'delta')]
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for row in rows:
        cells = [row['method']]
        for label in LABELS:
            cells += [f'{row[f"{label}_balanced"]:.2f}',
                      f'{row[f"{label}_imbalanced"]:.2f}',
                      f'{row[f"{label}_delta"]:+.2f}']
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='CPU class-stratified study (paper §4, Table 1)')
    parser.add_argument(
        '--work-dir',
        default='work_dirs/class_stratified_cpu_study',
        help='one sub-folder per run, plus summary.json')
    parser.add_argument(
        '--methods', nargs='+', help='subset of methods (default: all)')
    parser.add_argument(
        '--rerun', action='store_true', help='train runs that have results')
    parser.add_argument(
        '--quick',
        action='store_true',
        help='check that the study runs: 2 iterations of batch 20 per '
        'config on 200 images, numbers meaningless; runs and summary go to '
        '<work-dir>/quick')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> List[Dict]:
    """Run the study.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` when None).

    Returns:
        The summary rows (:func:`summarize`).
    """
    args = parse_args(argv)
    configs = study_configs()
    if args.methods:
        unknown = set(args.methods) - set(configs)
        if unknown:
            raise ValueError(f'--methods must be among {sorted(configs)}, '
                             f'got {sorted(unknown)}.')
        configs = {m: configs[m] for m in args.methods}
    study_dir = osp.join(args.work_dir, 'quick') if args.quick \
        else args.work_dir
    extra = ['--cfg-options', *QUICK_OPTIONS] if args.quick else []
    results: Dict[str, Dict[str, Dict[str, float]]] = {}
    # the study's progress and ETA over its trainings (each training logs
    # its own iterations)
    progress = tqdm(total=sum(len(v) for v in configs.values()),
                    desc='class-stratified study', unit='run')
    for method, variants in configs.items():
        for variant, path in sorted(variants.items()):
            progress.set_postfix_str(f'{method} {variant}')
            work_dir = osp.join(study_dir,
                                osp.splitext(osp.basename(path))[0])
            knn = None if args.rerun else read_knn(work_dir)
            if knn is None:
                # --overwrite: a rerun (or a run that died before its kNN
                # evaluation) starts from iteration 0 over old checkpoints
                subprocess.run([
                    sys.executable,
                    osp.join(REPO, 'tools', 'train.py'), path, '--work-dir',
                    work_dir, '--overwrite', *extra
                ], check=True)
                knn = read_knn(work_dir)
            if knn is None:
                raise RuntimeError(f'{path} logged no kNN evaluation in '
                                   f'{work_dir}; see its log.')
            results.setdefault(method, {})[variant] = knn
            progress.update()
    progress.close()
    rows = summarize(results)
    os.makedirs(study_dir, exist_ok=True)
    with open(osp.join(study_dir, 'summary.json'), 'w') as f:
        json.dump(rows, f, indent=2)
    print(format_table(rows))
    return rows


if __name__ == '__main__':
    main()
