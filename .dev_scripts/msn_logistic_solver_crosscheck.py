"""Cross-check of pmsn_mm's ``MSNLogisticRegressionAccuracy`` solver against
official MSN's ``logistic_eval.py`` (cyanure) on the same frozen features.

The problem (all on the CPU, seeded): ``--classes`` classes (default 100)
of class-coded images (:func:`pmsn_mm.datasets.sample_data.images.
class_image`: hue and stripe angle encode the class, neighbouring classes
differ by 1/K of the hue circle; a random brightness and strong pixel noise
per image), 32 px, through a fixed, randomly initialised conv net
(``torch.manual_seed(0)``, 3 conv layers, 384-d global-average-pooled
output, the width of ViT-S/16). Each class has 5 training images (the
1 / 2 / 5 images-per-class training sets take the first 1, 2, 5) and
``--test-per-class`` test images (default 12: 1,200 test points).

For every shot count and every ``--lambds`` value:

- official: ``logistic_eval.main`` itself (``--msn-root``, a checkout of
  facebookresearch/msn), run unchanged with ``preload=True`` on the
  features saved where it reads them (``train-features-<subset>-<fname>``,
  ``val-features-<fname>``; the model it builds first loads a stub
  checkpoint and is never used), with cyanure through
  ``msn_logistic_crosscheck.cyanure_shim`` (cyanure >= 1.0's renamed API;
  ``--cyanure-path``: the site-packages folder of a separate venv with
  ``pip install cyanure``, appended to ``sys.path`` so that this venv's
  numpy stays in use). Its ``preprocess``, ``MultiClassifier`` and ``fit``
  arguments (``it0=10, lambd=lambd / N, tol=1e-3, solver='auto', seed=0,
  max_epochs=300``) are the official script's own;
- pmsn_mm: :func:`pmsn_mm.evaluation.functional.msn_logistic.
  evaluate_msn_logistic` (the metric's solver) on the raw features.

Printed: a markdown table of both test accuracies, the share of test points
where the predictions agree, and cyanure's objective
``(1/N) sum CE + lambd/(2N) ||W||^2`` at both solutions (on the official
preprocessing), then the largest difference between cyanure's preprocessing
and :func:`~pmsn_mm.evaluation.functional.msn_logistic.
center_normalize_rows`. To tell solver tolerance from a different problem,
the official fit is also rerun on the official preprocessing in float64
(the official script gives cyanure float32 features, which stall its
solver above the optimum) with a tighter duality gap (``--tight-tol``,
default 1e-6 instead of 1e-3) and more epochs (``--tight-epochs``, 3000
instead of 300): its accuracy and its agreement with pmsn_mm.

On a shared CPU set ``OMP_NUM_THREADS=1`` (cyanure and BLAS otherwise
start a thread per core each, and oversubscribe).

Usage::

    python -m venv /tmp/cyvenv && /tmp/cyvenv/bin/pip install cyanure
    python .dev_scripts/msn_logistic_solver_crosscheck.py \\
        --msn-root ../msn \\
        --cyanure-path /tmp/cyvenv/lib/python3.11/site-packages
"""
import argparse
import contextlib
import io
import logging
import os
import os.path as osp
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import nn

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
SHOTS = (1, 2, 5)
TRAIN_PER_CLASS = max(SHOTS)


def make_images(classes: int, per_class: int, size: int,
                rng: np.random.Generator) -> Tuple[torch.Tensor, np.ndarray]:
    """``per_class`` class-coded images of every class, with a random
    brightness and strong noise (so the classes overlap)."""
    from pmsn_mm.datasets.sample_data.images import class_image
    images, labels = [], []
    for label in range(classes):
        for _ in range(per_class):
            img = class_image(label, classes, size, size, rng).astype(
                np.float32)
            img = img * rng.uniform(0.5, 1.5) + rng.normal(0, 40, img.shape)
            images.append(np.clip(img, 0, 255))
            labels.append(label)
    arr = (np.stack(images) / 255.0 - 0.5) / 0.25
    return torch.from_numpy(arr).permute(0, 3, 1, 2).float(), np.array(
        labels, dtype=np.int64)


def feature_net() -> nn.Module:
    """A fixed, randomly initialised conv net with 384-d outputs."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 384, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten()).eval()


def features(images: torch.Tensor) -> torch.Tensor:
    net = feature_net()
    with torch.no_grad():
        return torch.cat([net(b) for b in images.split(256)])


def make_problem(classes: int, test_per_class: int, seed: int
                 ) -> Dict[str, Tuple[torch.Tensor, np.ndarray]]:
    """Training (5 per class, class-major) and test features and labels."""
    rng = np.random.default_rng(seed)
    train_img, train_y = make_images(classes, TRAIN_PER_CLASS, 32, rng)
    test_img, test_y = make_images(classes, test_per_class, 32, rng)
    return dict(train=(features(train_img), train_y),
                test=(features(test_img), test_y))


def shots_subset(train: Tuple[torch.Tensor, np.ndarray],
                 shots: int) -> Tuple[torch.Tensor, np.ndarray]:
    """The first ``shots`` training images of every class."""
    x, y = train
    keep = np.flatnonzero(np.arange(len(y)) % TRAIN_PER_CLASS < shots)
    return x[keep].clone(), y[keep]


def cyanure_objective(weights: np.ndarray, x: np.ndarray, y: np.ndarray,
                      lambd: float) -> float:
    """``(1/N) sum_i CE + (lambd / N) / 2 ||W||^2`` (W: D x K, classes
    0..K-1 as columns)."""
    logits = x @ weights
    logits = logits - logits.max(1, keepdims=True)
    lse = np.log(np.exp(logits).sum(1))
    ce = lse - logits[np.arange(len(y)), y]
    return float(ce.mean() + lambd / len(y) / 2 * (weights**2).sum())


class Official:
    """``logistic_eval.main`` on saved features, with a recording shim."""

    def __init__(self, msn_root: str, work: str) -> None:
        sys.path.insert(0, osp.join(REPO, '.dev_scripts'))
        from msn_logistic_crosscheck import cyanure_shim
        shim = cyanure_shim()
        self.record: Dict[str, object] = {}
        record = self.record
        base_preprocess = shim.preprocess

        def preprocess(X, **kwargs):
            base_preprocess(X, **kwargs)
            array = X.numpy() if isinstance(X, torch.Tensor) else X
            record.setdefault('preprocessed', []).append(
                array.astype(np.float64))

        class Recording(shim.MultiClassifier):

            def fit(self, X, y, **kwargs):
                record['fit_kwargs'] = kwargs
                record['classifier'] = self
                return super().fit(X, y, **kwargs)

            def score(self, X, y):
                record['predictions'] = self.clf.predict(
                    np.ascontiguousarray(X))
                return super().score(X, y)

        self.shim = cyanure_shim()  # unrecorded, for :meth:`tight`
        shim.preprocess = preprocess
        shim.MultiClassifier = Recording
        sys.modules['cyanure'] = shim
        sys.path.insert(0, msn_root)
        self.msn_root, self.work = msn_root, work
        cwd = os.getcwd()
        os.chdir(msn_root)
        try:
            import logistic_eval
        finally:
            os.chdir(cwd)
        self.logistic_eval = logistic_eval
        self.fname = 'stub.pth.tar'
        # the model main() builds (and never uses with preload=True)
        torch.save({'target_encoder': {}}, osp.join(work, self.fname))

    def tight(self, train_x: np.ndarray, train_y: np.ndarray,
              test_x: np.ndarray, lambd: float, tol: float,
              max_epochs: int) -> np.ndarray:
        """The official fit on the official preprocessing in float64 (the
        official script hands cyanure float32 features), with a tighter
        duality-gap ``tol`` and more epochs: test predictions."""
        kwargs = dict(self.record['fit_kwargs'])  # type: ignore[call-overload]
        kwargs.update(lambd=lambd / len(train_y), lambd2=lambd / len(train_y),
                      tol=tol, max_epochs=max_epochs)
        clf = self.shim.MultiClassifier(loss='multiclass-logistic',
                                        penalty='l2', fit_intercept=False)
        clf.fit(train_x.astype(np.float64), train_y, **kwargs)
        return clf.clf.predict(np.ascontiguousarray(test_x, np.float64))

    def run(self, train: Tuple[torch.Tensor, np.ndarray],
            test: Tuple[torch.Tensor, np.ndarray], shots: int,
            lambd: float) -> Dict:
        self.record.clear()
        subset = f'imagenet_subsets1/{shots}imgs_class.txt'
        tag = '-'.join(subset.split('/')).split('.txt')[0]
        torch.save(dict(embs=train[0].clone(),
                        labs=torch.from_numpy(train[1])),
                   osp.join(self.work, f'train-features-{tag}-{self.fname}'))
        torch.save(dict(embs=test[0].clone(),
                        labs=torch.from_numpy(test[1])),
                   osp.join(self.work, f'val-features-{self.fname}'))
        cwd = os.getcwd()
        os.chdir(self.msn_root)
        try:
            # main() prints the (unused) model and logs at INFO level
            logging.getLogger().setLevel(logging.WARNING)
            with contextlib.redirect_stdout(io.StringIO()):
                score = self.logistic_eval.main(
                    blocks=1, lambd=lambd, mask_frac=0.0, preload=True,
                    pretrained=self.work, fname=self.fname,
                    subset_path=subset, root_path='', image_folder='',
                    penalty='l2', model_name='deit_small', normalize=True,
                    device_str='cpu')
        finally:
            os.chdir(cwd)
        clf = self.record['classifier'].clf  # type: ignore[attr-defined]
        return dict(score=float(score) * 100,
                    predictions=np.asarray(self.record['predictions']),
                    weights=np.asarray(clf.coef_, dtype=np.float64),
                    preprocessed=self.record['preprocessed'],
                    fit_kwargs=self.record['fit_kwargs'])


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--msn-root', required=True,
                        help='a checkout of facebookresearch/msn')
    parser.add_argument('--cyanure-path', help='site-packages folder with '
                        'cyanure, appended to sys.path')
    parser.add_argument('--classes', type=int, default=100)
    parser.add_argument('--test-per-class', type=int, default=12)
    parser.add_argument('--lambds', type=float, nargs='+',
                        default=[0.00025, 0.0025, 0.025])
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--tight-tol', type=float, default=1e-6,
                        help='duality-gap tol of the extra cyanure fit '
                        '(official: 1e-3)')
    parser.add_argument('--tight-epochs', type=int, default=3000,
                        help='max_epochs of the extra cyanure fit '
                        '(official: 300)')
    args = parser.parse_args(argv)
    if args.cyanure_path:
        sys.path.append(args.cyanure_path)
    sys.path.insert(0, REPO)
    from importlib.metadata import version

    import cyanure.data_processing  # noqa: F401  fail early without it
    import sklearn

    from pmsn_mm.evaluation.functional.msn_logistic import (
        center_normalize_rows, evaluate_msn_logistic)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    start = time.time()
    problem = make_problem(args.classes, args.test_per_class, args.seed)
    test = problem['test']
    print(f'features: {args.classes} classes, {len(test[1])} test points, '
          f'dimension {test[0].shape[1]} ({time.time() - start:.0f} s)')
    official = Official(osp.abspath(args.msn_root),
                        tempfile.mkdtemp(prefix='msn_solver_crosscheck_'))
    rows: List[str] = []
    max_prep = 0.0
    for shots in SHOTS:
        train = shots_subset(problem['train'], shots)
        for lambd in args.lambds:
            tic = time.time()
            off = official.run(train, test, shots, lambd)
            t_off = time.time() - tic
            tic = time.time()
            ours = evaluate_msn_logistic(train[0], train[1], test[0],
                                         test[1], lambd=lambd)
            t_ours = time.time() - tic
            train_x, test_x = off['preprocessed']
            max_prep = max(max_prep, float(np.abs(
                center_normalize_rows(train[0]) - train_x).max()), float(
                    np.abs(center_normalize_rows(test[0]) - test_x).max()))
            agree = float((off['predictions'] == ours.predictions).mean())
            tight = official.tight(train_x, train[1], test_x, lambd,
                                   args.tight_tol, args.tight_epochs)
            agree_tight = float((tight == ours.predictions).mean())
            acc_tight = float((tight == test[1]).mean() * 100)
            f_off = cyanure_objective(off['weights'], train_x, train[1],
                                      lambd)
            f_ours = cyanure_objective(ours.weights, train_x, train[1],
                                       lambd)
            rows.append(
                f'| {shots} | {len(train[1])} | {lambd:g} | '
                f'{off["score"]:.2f} | {ours.test_accuracy:.2f} | '
                f'{ours.test_accuracy - off["score"]:+.2f} | '
                f'{100 * agree:.2f} | {f_off:.6f} | {f_ours:.6f} | '
                f'{acc_tight:.2f} | {100 * agree_tight:.2f} | '
                f'{t_off:.1f} / {t_ours:.1f} |')
            print(rows[-1], flush=True)
    print(f'official fit arguments: {off["fit_kwargs"]}')
    print(f'cyanure {version("cyanure")}, scikit-learn '
          f'{sklearn.__version__}, torch {torch.__version__}')
    print('| images per class | N | lambd | official (cyanure) top-1 % | '
          'pmsn_mm top-1 % | difference | agreement % | objective, cyanure '
          '| objective, pmsn_mm | cyanure in float64, tol '
          f'{args.tight_tol:g}, {args.tight_epochs} epochs: top-1 % | its '
          'agreement with pmsn_mm % | seconds (official / pmsn_mm) |')
    print('| --- ' * 12 + '|')
    print('\n'.join(rows))
    print(f'preprocessing: max |cyanure - center_normalize_rows| = '
          f'{max_prep:.1e}')


if __name__ == '__main__':
    main()
