"""Write mmpretrain annotation lists for iNaturalist 2018.

Reads the official ``train2018.json`` / ``val2018.json`` and writes, under
``--out`` (default: the data root itself)::

    meta/train.txt    train_val2018/Plantae/7477/<hash>.jpg 7477
    meta/val.txt      (the official val set, the usual test set)
    meta/classes.txt  '0' ... '8141'

Labels (``category_id``) come from :mod:`pmsn_mm.datasets.inat18`, so these
lists and the ``INat18`` dataset always agree; ``meta/train.txt`` is what
``configs/_base_/datasets/inat18_msn.py`` reads.

Example::

    python tools/dataset_converters/convert_inat18.py data/inat18
"""
import argparse
import os.path as osp
import sys
from functools import partial
from typing import Optional, Sequence

from tqdm import tqdm

from pmsn_mm.datasets.annotation_io import read_json_dict
from pmsn_mm.datasets.inat18 import (INAT18_CLASSES, inat18_annotation_file,
                                     inat18_samples)

# the helpers beside it (a script's folder is on sys.path; add it when the
# script is imported instead of run)
if osp.dirname(osp.abspath(__file__)) not in sys.path:
    sys.path.append(osp.dirname(osp.abspath(__file__)))
from annotation_lists import write_annotation_list, write_class_names

SPLITS = ('train', 'val')


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Command-line arguments.

    Args:
        argv: Arguments (None: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(
        description='Write meta/{train,val}.txt annotation lists for '
        'iNaturalist 2018 from train2018.json / val2018.json.')
    parser.add_argument('data_root', help='folder holding train2018.json, '
                        'val2018.json and train_val2018/')
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
    meta = osp.join(args.out or args.data_root, 'meta')
    for split in SPLITS:
        path = inat18_annotation_file(args.data_root, split)
        annotation = read_json_dict(
            path, 'Pass the folder holding train2018.json and val2018.json.')
        samples = inat18_samples(
            annotation, path,
            progress=partial(tqdm, desc=f'iNat18 {split}', unit='image'))
        count = write_annotation_list(osp.join(meta, f'{split}.txt'), samples)
        print(f'{split}: {count} images -> {osp.join(meta, split)}.txt')
    write_class_names(osp.join(meta, 'classes.txt'), INAT18_CLASSES)


if __name__ == '__main__':
    main()
