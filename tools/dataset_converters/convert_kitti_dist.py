"""Write mmpretrain annotation lists for KITTI/Dist.

Reads the original KITTI object labels (``training/label_2/*.txt``) and
writes, under ``--out`` (default: the data root itself)::

    meta/train.txt    training/image_2/000000.png <label>
    meta/test.txt     training/image_2/000003.png <label>
    meta/classes.txt  no_vehicle, below_8, below_20, above_20

Labels and the seeded 80/20 split come from :mod:`pmsn_mm.datasets.kitti_dist`
(the rule of VISSL's ``create_kitti_dist_data_files.py``, with a reproducible
split), so these lists and the ``KITTIDist`` dataset always agree.

Example::

    python tools/dataset_converters/convert_kitti_dist.py data/kitti --seed 0
"""
import argparse
import os.path as osp
import sys
from functools import partial
from typing import Optional, Sequence

from tqdm import tqdm

from pmsn_mm.datasets.kitti_dist import (KITTI_DIST_CLASSES, KITTI_SPLITS,
                                         kitti_dist_samples)

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from annotation_lists import write_annotation_list, write_class_names


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Command-line arguments.

    Args:
        argv: Arguments (None: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(
        description='Write meta/{train,test}.txt annotation lists for '
        'KITTI/Dist from the KITTI object labels.')
    parser.add_argument('data_root', help='folder holding training/label_2 '
                        'and training/image_2')
    parser.add_argument('--out', default=None,
                        help='output folder (default: data_root); files go '
                        'to <out>/meta/')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the train/test split (default: 0)')
    parser.add_argument('--train-fraction', type=float, default=0.8,
                        help='fraction of images in the train split '
                        '(default: 0.8, as VISSL)')
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Convert; see the module docstring.

    Args:
        argv: Arguments (None: ``sys.argv[1:]``).
    """
    args = parse_args(argv)
    meta = osp.join(args.out or args.data_root, 'meta')
    for split in KITTI_SPLITS:
        samples = kitti_dist_samples(
            args.data_root, split, args.train_fraction, args.seed,
            progress=partial(tqdm, desc=f'KITTI/Dist {split}', unit='image'))
        count = write_annotation_list(osp.join(meta, f'{split}.txt'), samples)
        print(f'{split}: {count} images -> {osp.join(meta, split)}.txt')
    write_class_names(osp.join(meta, 'classes.txt'), KITTI_DIST_CLASSES)


if __name__ == '__main__':
    main()
