"""Cross-check of the low-shot logistic-regression evaluation: a pmsn_mm
checkpoint evaluated by official MSN's ``logistic_eval.py`` (through
``tools/model_converters/pmsn_to_msn.py``'s export) and by pmsn_mm, on the
same features and the same split (docs/msn_checkpoints.md).

Needs a checkout of facebookresearch/msn (``--msn-root``) and cyanure
(``pip install cyanure``, or ``--cyanure-path`` to a site-packages folder
that has it). cyanure >= 1.0 renamed the API that ``logistic_eval.py``
calls (``cyan.preprocess``, ``cyan.MultiClassifier(...).fit(it0=, lambd=,
lambd2=, nthreads=, tol=, solver=, seed=, max_epochs=)``); a module-level
shim maps those calls to ``cyanure.data_processing.preprocess`` and
``cyanure.estimators.Classifier(lambda_1=, lambda_2=, tol=, solver=,
random_state=, max_iter=)`` with the same values, so the official script
runs unchanged otherwise.

Steps, all on the CPU:

1. the split: every 5th image of each class of ``--data`` (class
   sub-folders; default the sample ImageNet training folder of
   ``tools/dataset_converters/make_sample_data.py``) is a test image, the
   others training images (as ``configs/pmsn/benchmarks/*_image-folder.py``
   split), laid out as official ``ImageNet`` reads it (``train/``,
   ``val/``, symbolic links);
2. the checkpoint (``--checkpoint``; default a PMSN ViT-S/16 of
   ``configs/_base_/models/pmsn_vit-small-p16.py`` at its seeded
   initialisation, saved as pmsn_mm saves one) exported to the official
   format;
3. official: ``logistic_eval.main`` (``init_model`` + ``load_pretrained`` of
   the export's ``target_encoder``, ``forward_blocks(x, 1)`` features of its
   ``init_data`` loader, cyanure's ``preprocess`` + L2 multinomial logistic
   regression, ``lambd`` 0.0025 as the README's command);
4. pmsn_mm: the same images' features from the checkpoint's target encoder
   in the ``vit-small-p16-msn-lastcls`` model (max difference printed),
   then (a) the official problem as pmsn_mm's
   ``MSNLogisticRegressionAccuracy`` solves it
   (:func:`pmsn_mm.evaluation.functional.msn_logistic.
   evaluate_msn_logistic`: rows centred and L2-normalised, no intercept,
   scikit-learn with ``C = 1 / lambd``) and (b) pmsn_mm's own
   ``LogisticRegressionAccuracy`` protocol (L2-normalised, intercept, C
   chosen on a split of the training images).

The solvers are compared on a larger problem (100 classes, 1 / 2 / 5
images per class, 1,200 test points, several ``lambd``) by
``msn_logistic_solver_crosscheck.py``, which uses this file's shim.

Usage::

    python .dev_scripts/msn_logistic_crosscheck.py --msn-root ../msn
"""
import argparse
import os
import os.path as osp
import sys
import tempfile
import types
from typing import Dict, List, Tuple

import numpy as np
import torch

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
IMAGE_EXTS = ('.jpg', '.jpeg', '.png', '.JPEG', '.JPG', '.PNG')


def cyanure_shim() -> types.ModuleType:
    """``cyanure`` as ``logistic_eval.py`` calls it (the pre-1.0 API)."""
    from cyanure.data_processing import preprocess
    from cyanure.estimators import Classifier

    class MultiClassifier:

        def __init__(self, loss: str, penalty: str,
                     fit_intercept: bool) -> None:
            self.kwargs = dict(loss=loss, penalty=penalty,
                               fit_intercept=fit_intercept)

        def fit(self, X, y, it0=10, lambd=0.0, lambd2=0.0, nthreads=-1,
                tol=1e-3, solver='auto', seed=0, max_epochs=300):
            self.clf = Classifier(
                **self.kwargs, lambda_1=lambd, lambda_2=lambd2, tol=tol,
                solver=solver, random_state=seed, max_iter=max_epochs,
                n_threads=nthreads, verbose=False,
                duality_gap_interval=it0)
            # the array's own dtype (float32 features), as the official
            # script hands it to cyanure
            self.clf.fit(np.ascontiguousarray(X), y)
            return self

        def score(self, X, y):
            return self.clf.score(np.ascontiguousarray(X), y)

    def old_preprocess(X, normalize=True, columns=False, centering=False):
        array = X.numpy() if isinstance(X, torch.Tensor) else X
        preprocess(array, centering=centering, normalize=normalize,
                   columns=columns)  # in place on the (row-major) view

    return types.SimpleNamespace(preprocess=old_preprocess,
                                 MultiClassifier=MultiClassifier)


def split_folder(data: str, out: str) -> Tuple[int, int]:
    """Every 5th image of each class -> ``out/val/<class>/``, the others ->
    ``out/train/<class>/`` (symbolic links)."""
    counts = [0, 0]
    for cls in sorted(os.listdir(data)):
        files = sorted(
            osp.relpath(osp.join(top, name), osp.join(data, cls))
            for top, _, names in os.walk(osp.join(data, cls))
            for name in names if name.endswith(IMAGE_EXTS))
        for i, rel in enumerate(files):
            part = 'val' if i % 5 == 4 else 'train'
            dst = osp.join(out, part, cls, rel.replace(os.sep, '_'))
            os.makedirs(osp.dirname(dst), exist_ok=True)
            os.symlink(osp.abspath(osp.join(data, cls, rel)), dst)
            counts[part == 'val'] += 1
    return counts[0], counts[1]


def make_checkpoint(path: str) -> None:
    """A PMSN ViT-S/16 at its seeded initialisation, saved as pmsn_mm
    saves a checkpoint (state_dict + meta with the config)."""
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    from mmpretrain.registry import MODELS

    import pmsn_mm  # noqa: F401
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(
        osp.join(REPO, 'configs', '_base_', 'models', 'pmsn_vit-small-p16.py'))
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    torch.save(dict(state_dict=model.state_dict(),
                    meta=dict(epoch=0, cfg=cfg.pretty_text)), path)


def official_eval(msn_root: str, root: str, export: str,
                  lambd: float) -> Dict:
    """``logistic_eval.main`` on the split, with the cyanure shim."""
    sys.path.insert(0, msn_root)
    sys.modules['cyanure'] = cyanure_shim()
    cwd = os.getcwd()
    os.chdir(msn_root)  # its imports and logging are relative
    try:
        import logistic_eval
        embs = {}
        make = logistic_eval.make_embeddings

        def recording(**kwargs):
            out = make(**kwargs)
            # copies: logistic_eval.main preprocesses its arrays in place
            embs['train' if 'train' not in embs else 'val'] = tuple(
                t.clone() for t in out)
            return out

        logistic_eval.make_embeddings = recording
        score = logistic_eval.main(
            blocks=1, lambd=lambd, mask_frac=0.0, preload=False,
            pretrained=osp.dirname(export), fname=osp.basename(export),
            subset_path=None, root_path=root, image_folder='',
            penalty='l2', model_name='deit_small', normalize=True,
            device_str='cpu')
    finally:
        os.chdir(cwd)
    return dict(score=float(score), embs=embs)


def our_features(checkpoint: str, images: torch.Tensor) -> torch.Tensor:
    """The target encoder in the msn-lastcls model (final norm off)."""
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    from mmpretrain.registry import MODELS
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(osp.join(
        REPO, 'configs', '_base_', 'models',
        'vit-small-p16-msn-lastcls_features.py'))
    cfg.model.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    state = torch.load(checkpoint, map_location='cpu',
                       weights_only=True)['state_dict']
    prefix = 'target_net.module.0.'
    model.backbone.load_state_dict(
        {k[len(prefix):]: v for k, v in state.items()
         if k.startswith(prefix) and not k.startswith(prefix + 'ln1.')})
    model.eval()
    with torch.no_grad():
        return model.extract_feat(images)[-1]


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--msn-root', required=True)
    parser.add_argument('--data', default='data/imagenet/train',
                        help='image folder with class sub-folders')
    parser.add_argument('--checkpoint', help='pmsn_mm PMSN ViT-S/16 '
                        'checkpoint (default: a seeded initialisation)')
    parser.add_argument('--lambd', type=float, default=0.0025,
                        help="logistic_eval.py --lambd (README: 0.0025)")
    parser.add_argument('--cyanure-path', help='a site-packages folder with '
                        'cyanure, prepended to sys.path')
    args = parser.parse_args(argv)
    if args.cyanure_path:
        sys.path.insert(0, args.cyanure_path)
    sys.path.insert(0, REPO)
    sys.path.append(osp.join(REPO, 'tools', 'model_converters'))
    from msn_checkpoints import pmsn_to_msn

    from pmsn_mm.evaluation.functional.logistic_regression import \
        select_and_evaluate
    from pmsn_mm.evaluation.functional.msn_logistic import \
        evaluate_msn_logistic
    work = tempfile.mkdtemp(prefix='msn_crosscheck_')
    n_train, n_test = split_folder(osp.abspath(args.data),
                                   osp.join(work, 'data'))
    checkpoint = args.checkpoint or osp.join(work, 'pmsn.pth')
    if not args.checkpoint:
        make_checkpoint(checkpoint)
    export = osp.join(work, 'export', 'pmsn_msn-format.pth.tar')
    os.makedirs(osp.dirname(export))
    torch.save(pmsn_to_msn(torch.load(checkpoint, map_location='cpu',
                                      weights_only=True), checkpoint),
               export)
    official = official_eval(osp.abspath(args.msn_root),
                             osp.join(work, 'data'), export, args.lambd)
    (_, train_y), (_, test_y) = (official['embs']['train'],
                                 official['embs']['val'])
    # the official loader's images again, through pmsn_mm's model
    sys.path.insert(0, osp.abspath(args.msn_root))
    import torchvision.transforms as T
    from src.data_manager import init_data
    transform = T.Compose([
        T.Resize(size=256), T.CenterCrop(size=224), T.ToTensor(),
        T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    loader, _ = init_data(transform=transform, batch_size=16, num_workers=0,
                          world_size=1, rank=0,
                          root_path=osp.join(work, 'data'), image_folder='',
                          training=True, copy_data=False, drop_last=False)
    images = torch.cat([x for x, _ in loader])
    ours = our_features(checkpoint, images)
    raw_train = official['embs']['train'][0]
    print(f'split: {n_train} training, {n_test} test images of {args.data}')
    print(f'features: max |pmsn_mm - official| = '
          f'{(ours - raw_train).abs().max().item():.2e} '
          f'(max |official| {raw_train.abs().max().item():.2e})')
    print(f'official logistic_eval.py (cyanure, lambd {args.lambd}): '
          f'{100 * official["score"]:.2f} %')
    test_images = torch.cat([x for x, _ in init_data(
        transform=transform, batch_size=16, num_workers=0, world_size=1,
        rank=0, root_path=osp.join(work, 'data'), image_folder='',
        training=False, copy_data=False, drop_last=False)[0]])
    ours_test = our_features(checkpoint, test_images)
    msn = evaluate_msn_logistic(ours, train_y, ours_test, test_y,
                                lambd=args.lambd)
    print('pmsn_mm MSNLogisticRegressionAccuracy (the official problem: '
          'centred, normalised, no intercept, scikit-learn, C = 1/lambd = '
          f'{1 / args.lambd:g}): {msn.test_accuracy:.2f} %')
    result = select_and_evaluate(ours.numpy(), train_y.numpy(),
                                 ours_test.numpy(), test_y.numpy())
    print('pmsn_mm LogisticRegressionAccuracy (normalised, intercept, C '
          f'chosen on the training images: {result.best_c:g}): '
          f'{result.test_accuracy:.2f} %')


if __name__ == '__main__':
    main()
