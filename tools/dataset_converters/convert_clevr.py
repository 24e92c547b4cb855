"""Write mmpretrain annotation lists for CLEVR/Count or CLEVR/Dist.

Reads the original ``CLEVR_v1.0`` scene files and writes, under ``--out``
(default: the data root itself)::

    meta/train.txt    images/train/CLEVR_train_000000.png <label>
    meta/test.txt     images/val/CLEVR_val_000000.png <label>
    meta/classes.txt  one class name per line

Labels come from :mod:`pmsn_mm.datasets.clevr` (the rules of VISSL's
``create_clevr_{count,dist}_data_files.py``), so these lists and the
``CLEVRCount``/``CLEVRDist`` datasets always agree. Use them with::

    dict(type='CustomDataset', data_root='data/clevr',
         ann_file='meta/train.txt', classes='data/clevr/meta/classes.txt')

Example::

    python tools/dataset_converters/convert_clevr.py data/CLEVR_v1.0 \\
        --task count --out data/clevr_count
"""
import argparse
import os.path as osp
import sys
from functools import partial
from typing import Optional, Sequence

from tqdm import tqdm

from pmsn_mm.datasets.clevr import (CLEVR_COUNT_CLASSES, CLEVR_DIST_CLASSES,
                                    CLEVR_SPLITS, clevr_count_label,
                                    clevr_dist_label, clevr_samples)

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from annotation_lists import write_annotation_list, write_class_names

TASKS = {
    'count': (clevr_count_label, CLEVR_COUNT_CLASSES),
    'dist': (clevr_dist_label, CLEVR_DIST_CLASSES),
}


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Command-line arguments.

    Args:
        argv: Arguments (None: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(
        description='Write meta/{train,test}.txt annotation lists for '
        'CLEVR/Count or CLEVR/Dist from the CLEVR_v1.0 scene files.')
    parser.add_argument('data_root', help='the CLEVR_v1.0 folder (holding '
                        'scenes/ and images/)')
    parser.add_argument('--task', required=True, choices=sorted(TASKS),
                        help='count: number of objects (8 classes); dist: '
                        'depth bin of the closest object (6 classes)')
    parser.add_argument('--out', default=None,
                        help='output folder (default: data_root); files go '
                        'to <out>/meta/')
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Convert; see the module docstring.

    Args:
        argv: Arguments (None: ``sys.argv[1:]``).
    """
    args = parse_args(argv)
    label_fn, classes = TASKS[args.task]
    meta = osp.join(args.out or args.data_root, 'meta')
    for split in CLEVR_SPLITS:
        samples = clevr_samples(
            args.data_root, split, label_fn,
            progress=partial(tqdm, desc=f'CLEVR/{args.task} {split}',
                             unit='scene'))
        count = write_annotation_list(osp.join(meta, f'{split}.txt'), samples)
        print(f'{split}: {count} images -> {osp.join(meta, split)}.txt')
    write_class_names(osp.join(meta, 'classes.txt'), classes)


if __name__ == '__main__':
    main()
