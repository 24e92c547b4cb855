"""Fingerprint one seeded training step of shipped configs: the views the
data preprocessor makes, every loss and every gradient, as SHA-256 digests of
their bytes. A refactoring that should change no behaviour leaves them equal.

    python .dev_scripts/step_fingerprint.py dump /tmp/before.json   # on main
    # ... change things ...
    python .dev_scripts/step_fingerprint.py dump /tmp/after.json
    python .dev_scripts/step_fingerprint.py compare /tmp/before.json \
        /tmp/after.json

Each config is shrunk to CPU size exactly as the tests do
(``tests/_config_runs.py``: narrower encoders, small batches, the config's own
pipeline, views, algorithm, head, loss and prior) and runs on the sample data
(``make_sample_data`` into ``--data``, reused when it is there). Run from a
checkout: it imports ``tests._config_runs``.
"""
import argparse
import hashlib
import json
import os
import os.path as osp
import random
import sys
import tempfile
from typing import Dict, List

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
if REPO not in sys.path:  # tests._config_runs, from a checkout
    sys.path.insert(0, REPO)

#: One pretraining config per algorithm, view set and prior kind.
CONFIGS = [
    'pmsn/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py',
    'pmsn/pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py',
    'pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py',
    'pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-class-prior.py',
    'pmsn/pmsn_vit-base-p16_16xb64-300e_in1k-uniform-per-sample.py',
    'pmsn/pmsn_resnet50_32xb128-300e_inat18-power-law.py',
    'pmsn/pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-adaptive-power-law.py',
    'pswav/pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-power-law.py',
    'pswav/pswav_resnet50_8xb32-mcrop-coslr-200e_in1k-uniform-per-sample.py',
    'pswav/pswav_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py',
    'simclr/simclr_resnet18_2xb16-toy_power-law-overlay.py',
    'class_stratified/'
    'simclr_resnet50_16xb240-coslr-300e_in1k-class-imbalanced-k8.py',
    'class_stratified/'
    'vicreg_resnet50_16xb60-amp-coslr-300e_in1k-class-imbalanced-k2.py',
    'class_stratified/'
    'mae_vit-large-p16_16xb60-amp-coslr-800e_in1k-class-imbalanced-k2.py',
    'data2vec/data2vec_beit-base-p16_16xb128-amp-coslr-800e_in1k.py',
    'vicreg/vicreg_resnet50_8xb128-amp-coslr-300e_in1k-per-sample.py',
]


def _digest(tensor) -> str:
    t = tensor.detach().contiguous().cpu()
    return hashlib.sha256(t.view(-1).view(
        __import__('torch').uint8).numpy().tobytes()).hexdigest()[:16]


def _tensors(node, prefix: str, out: Dict[str, str]) -> None:
    import torch
    if isinstance(node, torch.Tensor):
        out[prefix] = _digest(node)
    elif isinstance(node, dict):
        for k, v in node.items():
            _tensors(v, f'{prefix}.{k}', out)
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            _tensors(v, f'{prefix}[{i}]', out)
    elif hasattr(node, 'to_dict') and hasattr(node, 'keys'):
        pass  # data samples: their labels are not views


def fingerprint(path: str, data_parent: str) -> Dict[str, str]:
    """Digests of one seeded step of the config at ``configs/path``."""
    import numpy as np
    import torch
    from mmengine.config import Config
    from mmengine.registry import RUNNERS
    from mmengine.runner import Runner

    from tests._config_runs import shrink
    cfg = Config.fromfile(osp.join(REPO, 'configs', path))
    work = tempfile.mkdtemp(prefix='fingerprint_')
    cwd = os.getcwd()
    os.chdir(data_parent)  # the configs' data_root is data/...
    try:
        shrink(cfg, work)
        cfg.randomness = dict(seed=0, deterministic=False)
        for key in ('val_dataloader', 'val_cfg', 'val_evaluator'):
            cfg.pop(key, None)
        runner_type = cfg.get('runner_type')
        runner = (RUNNERS.build(cfg) if runner_type else
                  Runner.from_cfg(cfg))
        runner.model.train()
        loader = runner.build_dataloader(cfg.train_dataloader, seed=0)
        random.seed(0), np.random.seed(0), torch.manual_seed(0)
        batch = next(iter(loader))
        model = runner.model
        torch.manual_seed(1)
        data = model.data_preprocessor(batch, True)
        out: Dict[str, str] = {}
        _tensors(data.get('inputs'), 'views', out)
        losses = model(**data, mode='loss')
        loss, _ = model.parse_losses(losses)
        _tensors(dict(losses), 'loss', out)
        loss.backward()
        for name, p in model.named_parameters():
            if p.grad is not None:
                out[f'grad.{name}'] = _digest(p.grad)
        return out
    finally:
        os.chdir(cwd)


def dump(out: str, data_parent: str, configs: List[str]) -> int:
    from pmsn_mm.datasets.sample_data import make_sample_data
    if not osp.isdir(osp.join(data_parent, 'data')):
        make_sample_data(osp.join(data_parent, 'data'))
    result = {}
    for path in configs:
        result[path] = fingerprint(path, data_parent)
        print(f'{path}: {len(result[path])} digests', flush=True)
    with open(out, 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)
    return 0


def compare(before: str, after: str) -> int:
    with open(before) as f:
        a = json.load(f)
    with open(after) as f:
        b = json.load(f)
    bad = 0
    for path in sorted(set(a) | set(b)):
        x, y = a.get(path, {}), b.get(path, {})
        diff = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
        print(f'{path}: {len(x)} digests, '
              f'{"identical" if not diff else f"{len(diff)} differ"}')
        for k in diff[:10]:
            print(f'  {k}: {x.get(k)} -> {y.get(k)}')
        bad += bool(diff)
    return int(bad > 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = parser.add_subparsers(dest='cmd', required=True)
    d = sub.add_parser('dump')
    d.add_argument('out')
    d.add_argument('--data', default=osp.join(tempfile.gettempdir(),
                                              'fingerprint_data'),
                   help='folder whose data/ holds the sample datasets')
    d.add_argument('--configs', nargs='*', default=CONFIGS)
    c = sub.add_parser('compare')
    c.add_argument('before')
    c.add_argument('after')
    args = parser.parse_args()
    if args.cmd == 'dump':
        os.makedirs(args.data, exist_ok=True)
        return dump(args.out, args.data, args.configs)
    return compare(args.before, args.after)


if __name__ == '__main__':
    sys.exit(main())
