"""Write the linear-probe configs of the evaluation matrix (paper App. E.2).

Every (encoder x representation x dataset) cell of the paper's tables gets
one config in ``configs/pmsn/benchmarks/``, named
``{encoder}-{representation}_8xb32-linear-{schedule}_{dataset}.py``, built
from the ``configs/_base_/{models,datasets,schedules}/`` probe files::

    python tools/misc/generate_probe_configs.py          # (re)write them
    python tools/misc/generate_probe_configs.py --check  # exit 1 if stale

Idempotent: a file is written only when its text changes. ``--check`` also
fails on a ``*-linear-*.py`` file in the folder that the matrix does not
produce. The values these configs must resolve to are in
``configs/recipes/evaluation.yaml`` (tested by
``tests/test_configs/test_recipes_evaluation.py``).
"""
import argparse
import glob
import os.path as osp
import sys
import textwrap
from typing import Dict, List, NamedTuple, Optional, Sequence

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
BENCHMARKS = osp.join(ROOT, 'configs', 'pmsn', 'benchmarks')
GPUS, BATCH = 8, 32  # VISSL: 8 GPUs x 32 images


class Encoder(NamedTuple):
    """A pretrained encoder of the paper's tables."""
    title: str
    family: str  # 'vit' or 'resnet'
    representations: Sequence[str]


class Dataset(NamedTuple):
    """A downstream dataset of the paper's tables."""
    title: str
    base: Optional[str]  # _base_/datasets file; None: derived from `parent`
    schedule: str  # _base_/schedules/sgd-nesterov_{schedule}.py
    num_classes: int
    vit_bicubic: bool  # VISSL's ViT transforms: the `<base>_vit.py` base
    parent: Optional[str] = None  # the probe whose training set is subset


#: The encoders (SimCLR / VICReg ResNet-50, MSN / PMSN ViT-S/16 and ViT-B/16,
#: MAE ViT-L/16, data2vec ViT-B/16) and their two representations each.
ENCODERS: Dict[str, Encoder] = {
    'resnet50': Encoder('ResNet-50', 'resnet', ('pool2048', 'pool8192')),
    'vit-small-p16': Encoder('ViT-S/16', 'vit', ('lastcls', 'concat4cls')),
    'vit-base-p16': Encoder('ViT-B/16', 'vit', ('lastcls', 'concat4cls')),
    'vit-large-p16': Encoder('ViT-L/16', 'vit', ('lastcls', 'concat4cls')),
    'data2vec-beit-base-p16': Encoder('data2vec ViT-B/16 (BEiT-style)', 'vit',
                                      ('lastcls', 'concat4cls')),
}
REPRESENTATIONS = {
    'lastcls': 'last-layer CLS token',
    'concat4cls': 'concatenated CLS tokens of the last 4 blocks',
    'pool2048': 'pooled 2048-d features',
    'pool8192': '2x2-pooled 8192-d features',
}
DATASETS: Dict[str, Dataset] = {
    'in1k': Dataset('ImageNet-1K', 'in1k_linear-probe.py', 'steplr-28e',
                    1000, True),
    'in1k-1pct': Dataset('ImageNet-1K low-shot 1%', None, 'steplr-28e', 1000,
                         True, parent='in1k'),
    'inat18': Dataset('iNaturalist 2018', 'inat18_linear-probe.py',
                      'steplr-84e', 8142, True),
    'cifar100': Dataset('CIFAR-100', 'cifar100_linear-probe.py', 'steplr-28e',
                        100, True),
    'cifar100-1pct': Dataset('CIFAR-100, 1% of the training labels',
                             'cifar100-1pct_linear-probe.py', 'steplr-28e',
                             100, True),
    'places205': Dataset('Places205', 'places205_linear-probe.py',
                         'steplr-14e', 205, True),
    'clevr-count': Dataset('CLEVR/Count', 'clevr-count_linear-probe.py',
                           'coslr-50e', 8, False),
    'clevr-dist': Dataset('CLEVR/Dist', 'clevr-dist_linear-probe.py',
                          'coslr-100e', 6, False),
    'kitti-dist': Dataset('KITTI/Dist', 'kitti-dist_linear-probe.py',
                          'steplr-28e', 4, False),
}

HOOKS = """default_hooks = dict(
    logger=dict(type='LoggerHook', interval=100),
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=1))
"""


def config_name(encoder: str, representation: str, dataset: str) -> str:
    """File name of one cell of the matrix."""
    schedule = DATASETS[dataset].schedule
    return (f'{encoder}-{representation}_{GPUS}xb{BATCH}-linear-{schedule}_'
            f'{dataset}.py')


def _comment(text: str) -> str:
    lines = textwrap.wrap(text, width=77, break_long_words=False,
                          break_on_hyphens=False)
    return ''.join(f'# {line}\n' for line in lines)


def _low_shot(encoder: str, representation: str, dataset: str) -> str:
    parent = config_name(encoder, representation, DATASETS[dataset].parent)
    return _comment(
        f'Linear probe of paper App. E.2 on {DATASETS[dataset].title} (the '
        f"paper's low-shot table): the probe of ./{parent} trained on the "
        'official SimCLR 1% subset (data/imagenet/1percent.txt, one file name '
        'per line) and evaluated on the full val set.') + f"""\
_base_ = './{parent}'
train_dataloader = dict(
    dataset=dict(
        _delete_=True,
        type='LowShotDataset',
        list_file='data/imagenet/1percent.txt',
        dataset={{{{_base_.train_dataloader.dataset}}}}))
"""


def config_text(encoder: str, representation: str, dataset: str) -> str:
    """The Python text of one probe config."""
    data, enc = DATASETS[dataset], ENCODERS[encoder]
    if data.parent is not None:
        return _low_shot(encoder, representation, dataset)
    text = _comment(
        f'Linear probe of paper App. E.2 (VISSL defaults): {enc.title} '
        f'{REPRESENTATIONS[representation]} on {data.title}; plain linear + '
        'BN-linear probes trained in one run.')
    # ViT probes of the datasets whose VISSL ViT transforms differ read the
    # dataset's `_vit` base
    vit_base = enc.family == 'vit' and data.vit_bicubic
    dataset_base = data.base.replace('.py', '_vit.py') if vit_base \
        else data.base
    text += f"""\
_base_ = [
    '../../_base_/models/{encoder}-{representation}_linear-probe.py',
    '../../_base_/datasets/{dataset_base}',
    '../../_base_/schedules/sgd-nesterov_{data.schedule}.py',
    '../../_base_/default_runtime.py',
]
model = dict(head=dict(num_classes={data.num_classes}))
"""
    if enc.family == 'resnet':
        text += """\
# VISSL's ResNet probes (regularize_bn: False): no weight decay on the
# BatchNorm probe's scale and shift
optim_wrapper = dict(paramwise_cfg=dict(norm_decay_mult=0.0))
"""
    return text + HOOKS


def matrix() -> Dict[str, str]:
    """Every probe config of the matrix: file name -> text."""
    return {
        config_name(e, r, d): config_text(e, r, d)
        for e, enc in ENCODERS.items() for r in enc.representations
        for d in DATASETS
    }


def _differences(configs: Dict[str, str], folder: str) -> List[str]:
    problems = []
    for name, text in sorted(configs.items()):
        path = osp.join(folder, name)
        if not osp.isfile(path):
            problems.append(f'missing: {name}')
        else:
            with open(path) as f:
                if f.read() != text:
                    problems.append(f'differs: {name}')
    for path in sorted(glob.glob(osp.join(folder, '*-linear-*.py'))):
        if osp.basename(path) not in configs:
            problems.append(f'not in the matrix: {osp.basename(path)}')
    return problems


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Write (or, with ``--check``, compare) the probe configs.

    Returns:
        0, or 1 when ``--check`` finds a difference.
    """
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--check', action='store_true',
                        help='exit 1 if a config is missing, differs from '
                        'the matrix or is not in it; write nothing')
    parser.add_argument('--out-dir', default=BENCHMARKS,
                        help='folder of the configs (default: %(default)s)')
    args = parser.parse_args(argv)
    configs = matrix()
    if args.check:
        problems = _differences(configs, args.out_dir)
        for line in problems:
            print(line)
        if problems:
            print('run python tools/misc/generate_probe_configs.py')
        return 1 if problems else 0
    written = 0
    for name, text in sorted(configs.items()):
        path = osp.join(args.out_dir, name)
        if osp.isfile(path):
            with open(path) as f:
                if f.read() == text:
                    continue
        with open(path, 'w') as f:
            f.write(text)
        written += 1
        print(f'wrote {name}')
    for line in _differences(configs, args.out_dir):
        print(line)  # files the matrix does not produce
    print(f'{len(configs)} probe configs, {written} written')
    return 0


if __name__ == '__main__':
    sys.exit(main())
