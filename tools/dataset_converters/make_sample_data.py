"""Write small copies of every dataset pmsn_mm reads, in their real formats.

Every shipped config then finds its data where its ``data_root`` looks::

    python tools/dataset_converters/make_sample_data.py data
    python tools/train.py configs/pmsn/CONFIG.py   # reads data/imagenet, ...

Formats (``--formats``): imagenet (train/val folders, meta lists, SimCLR's
1percent.txt), inat18 (train2018.json, val2018.json, train_val2018/; every
one of the 8142 classes has an image unless ``--inat18-head-only``),
places205 (csv split, images256/), clevr (CLEVR_v1.0 scenes JSON + RGBA
PNGs), kitti (training/label_2 + image_2), cifar10 and cifar100 (python
pickles), mnist (extracted idx files). Images are class-coded (colour and
stripe angle), so a probe on them beats chance; the ImageNet training split
holds the awkward files of real sets: grayscale, CMYK and EXIF-rotated
JPEGs, PNG bytes named .JPEG, RGBA and 16-bit PNGs, a 40 x 30 image.
``--corrupt`` then truncates the first training image of every image-file
format (to see how a run reports a bad file).
"""
import argparse
import json
import os.path as osp
from typing import Dict, List, Optional

from pmsn_mm.datasets.sample_data import FORMATS, make_sample_data, truncate
from pmsn_mm.datasets.sample_data.layouts import PLACES205_IMAGE_DIR


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', help='output folder, e.g. data')
    parser.add_argument('--formats', nargs='+', default=list(FORMATS),
                        choices=FORMATS, help='datasets to write')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--inat18-head-only', action='store_true',
        help='only the 6 iNat18 classes with several images: 40 training '
        'and 12 val images, so a frozen-feature benchmark demos in seconds '
        '(a ClassPrior over 8142 prototypes then refuses the empty classes)')
    parser.add_argument(
        '--corrupt', action='store_true',
        help='truncate the first training image of each image-file format')
    return parser.parse_args(argv)


def first_train_image(name: str, root: str) -> Optional[str]:
    """Path of the first training image file of a written format, or None
    for the formats without image files (CIFAR, MNIST).

    Args:
        name: One of :data:`FORMATS`.
        root: Its data root.
    """
    if name == 'imagenet':
        with open(osp.join(root, 'meta', 'train.txt')) as f:
            return osp.join(root, 'train', f.readline().split()[0])
    if name == 'inat18':
        with open(osp.join(root, 'train2018.json')) as f:
            return osp.join(root, json.load(f)['images'][0]['file_name'])
    if name == 'places205':
        with open(osp.join(root, 'trainvalsplit_places205',
                           'train_places205.csv')) as f:
            return osp.join(root, PLACES205_IMAGE_DIR, f.readline().split()[0])
    if name == 'clevr':
        return osp.join(root, 'images', 'train', 'CLEVR_train_000000.png')
    if name == 'kitti':
        return osp.join(root, 'training', 'image_2', '000000.png')
    return None


def main(argv=None) -> Dict[str, str]:
    args = parse_args(argv)
    roots = make_sample_data(
        args.root, args.formats, seed=args.seed,
        inat18_all_classes=not args.inat18_head_only, progress=True)
    for name, root in roots.items():
        print(f'{name:10s} {root}')
    if args.corrupt:
        damaged: List[str] = []
        for name, root in roots.items():
            path = first_train_image(name, root)
            if path is not None:
                truncate(path)
                damaged.append(path)
        print('truncated:\n  ' + '\n  '.join(damaged))
    return roots


if __name__ == '__main__':
    main()
