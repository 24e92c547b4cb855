"""Small copies of every dataset pmsn_mm reads, in the datasets' own layouts.

:func:`make_sample_data` writes, under one root, the folders the configs'
``data_root`` settings name, with real decodable class-coded images
(:mod:`.images`), the annotation files in their official formats and the
awkward files real sets hold (:data:`AWKWARD`): the fixture of the config
tests and ``tools/dataset_converters/make_sample_data.py``.
"""
import json
import os
import os.path as osp
import pickle
from typing import Callable, Dict, List, Sequence, Tuple, cast

import numpy as np
from tqdm import tqdm

from .images import class_image, image_size, write_image

#: The formats, each written into ``<root>/<format>`` (configs' data roots).
FORMATS = ('imagenet', 'inat18', 'places205', 'clevr', 'kitti', 'cifar10',
           'cifar100', 'mnist')
#: How the last ImageNet training image of class 0, 1, ... is stored (file
#: kind, extension); the rest are baseline RGB JPEGs.
AWKWARD: Tuple[Tuple[str, str], ...] = (
    ('gray_jpeg', '.JPEG'), ('cmyk_jpeg', '.JPEG'),
    ('exif_rotated_jpeg', '.JPEG'), ('png_as_jpeg', '.JPEG'),
    ('rgba_png', '.png'), ('gray16_png', '.png'), ('rgb16_png', '.png'),
    ('tiny_jpeg', '.JPEG'), ('progressive_jpeg', '.JPEG'),
    ('palette_png', '.png'))
#: Images per class in the sample ``1percent.txt`` (the real list has ~13):
#: enough for a logistic regression to hold one out when choosing C.
ONE_PERCENT_PER_CLASS = 3
#: An image smaller than every crop of the shipped pipelines (96 px).
TINY_SIZE = (30, 40)
#: The first ten ImageNet-1K classes (labels 0..9 of the official order).
IMAGENET_WNIDS = ('n01440764', 'n01443537', 'n01484850', 'n01491361',
                  'n01494475', 'n01496331', 'n01498041', 'n01514668',
                  'n01514859', 'n01518878')
#: Training images per ImageNet class (long-tailed; the class-stratified
#: tests take 2 batches of 8 from 2 classes without replacement).
IMAGENET_TRAIN_COUNTS = (12, 10, 8, 6, 5, 4, 4, 4, 4, 4)
#: iNat18 classes with several images (ids in [0, 8142)) and their counts;
#: with ``inat18_all_classes`` every other id gets one small image, so a
#: class prior over all 8142 prototypes has no empty class.
INAT18_HEAD = ((0, 12), (1000, 9), (2500, 7), (4000, 5), (6000, 4),
               (8141, 3))
INAT18_NUM_CLASSES = 8142
INAT18_SUPERCATEGORIES = ('Plantae', 'Insecta', 'Aves', 'Reptilia',
                          'Mammalia', 'Fungi', 'Amphibia', 'Mollusca')
PLACES205_SAMPLE_CLASSES = ('abbey', 'airport_terminal', 'alley',
                            'amphitheater', 'apartment_building/outdoor',
                            'aquarium')
PLACES205_IMAGE_DIR = 'data/vision/torralba/deeplearning/images256'
CLEVR_SHAPES = ('cube', 'sphere', 'cylinder')
CLEVR_COLORS = ('gray', 'red', 'blue', 'green', 'brown', 'purple', 'cyan',
                'yellow')
#: KITTI object types; the first three count as vehicles for KITTI/Dist.
KITTI_TYPES = ('Car', 'Van', 'Truck', 'Pedestrian', 'Cyclist', 'DontCare')


def _hex(rng: np.random.Generator, n: int = 32) -> str:
    return ''.join('0123456789abcdef'[i] for i in rng.integers(0, 16, n))


def _write_lines(path: str, lines: Sequence[str]) -> None:
    os.makedirs(osp.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.writelines(f'{line}\n' for line in lines)


def _write_json(path: str, data: dict) -> None:
    os.makedirs(osp.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(data, f)


def imagenet_wnids(num_classes: int) -> List[str]:
    """The first ImageNet-1K wnids, then made-up ``n9xxxxxxx`` ids."""
    extra = [f'n9{i:07d}' for i in range(num_classes - len(IMAGENET_WNIDS))]
    return (list(IMAGENET_WNIDS) + extra)[:num_classes]


def write_imagenet(root: str,
                   rng: np.random.Generator,
                   train_counts: Sequence[int] = IMAGENET_TRAIN_COUNTS,
                   long_side: Tuple[int, int] = (160, 400),
                   val_per_class: int = 2,
                   awkward: bool = True) -> str:
    """ImageNet: ``train/<wnid>/<wnid>_<i>.JPEG``, ``val/ILSVRC2012_val_*``,
    ``meta/{train,val}.txt`` (``<path> <label>``), SimCLR's
    ``1percent.txt`` (one training file name per line,
    :data:`ONE_PERCENT_PER_CLASS` per class) and official MSN's low-shot
    lists ``imagenet_subsets1/{1,2,5}imgs_class.txt`` (the first 1, 2, 5
    training file names of each class).

    Args:
        root: The data root to write (``data/imagenet``).
        rng: Source of randomness.
        train_counts: Training images of each class (one entry per class).
        long_side: Range of the images' long side.
        val_per_class: Validation images per class.
        awkward: Store the first classes' last image as :data:`AWKWARD` says.

    Returns:
        ``root``.
    """
    num_classes = len(train_counts)
    train, one_percent = [], []
    per_class: List[List[str]] = []
    for label, (wnid, count) in enumerate(
            zip(imagenet_wnids(num_classes), train_counts)):
        per_class.append([])
        for i in range(count):
            kind, ext = (AWKWARD[label] if awkward and i == count - 1
                         and label < len(AWKWARD) else ('rgb_jpeg', '.JPEG'))
            name = f'{wnid}/{wnid}_{i + 1}{ext}'
            size = TINY_SIZE if kind == 'tiny_jpeg' else image_size(
                rng, *long_side)
            rgb = class_image(label, num_classes, *size, rng)
            write_image(osp.join(root, 'train', name), rgb,
                        'rgb_jpeg' if kind == 'tiny_jpeg' else kind)
            train.append(f'{name} {label}')
            per_class[-1].append(osp.basename(name))
            if i < ONE_PERCENT_PER_CLASS:
                one_percent.append(osp.basename(name))
    val = []
    for j in range(val_per_class * num_classes):
        label = j % num_classes
        name = f'ILSVRC2012_val_{j + 1:08d}.JPEG'
        write_image(osp.join(root, 'val', name),
                    class_image(label, num_classes, *image_size(
                        rng, *long_side), rng),
                    'gray_jpeg' if awkward and j == 0 else 'rgb_jpeg')
        val.append(f'{name} {label}')
    _write_lines(osp.join(root, 'meta', 'train.txt'), train)
    _write_lines(osp.join(root, 'meta', 'val.txt'), val)
    _write_lines(osp.join(root, '1percent.txt'), one_percent)
    for n in (1, 2, 5):  # official MSN's low-shot lists (--subset-path)
        _write_lines(osp.join(root, 'imagenet_subsets1', f'{n}imgs_class.txt'),
                     [name for names in per_class for name in names[:n]])
    return root


def _inat18_json(entries: List[Tuple[str, int]], offset: int) -> dict:
    categories = sorted({c for _, c in entries})
    return dict(
        info=dict(description='pmsn_mm sample of iNaturalist 2018'),
        images=[dict(id=offset + i, file_name=f, width=0, height=0)
                for i, (f, _) in enumerate(entries)],
        annotations=[dict(id=offset + i, image_id=offset + i, category_id=c)
                     for i, (_, c) in enumerate(entries)],
        categories=[dict(id=c, name=f'species_{c}', supercategory=_super(c))
                    for c in categories])


def _super(category: int) -> str:
    return INAT18_SUPERCATEGORIES[category % len(INAT18_SUPERCATEGORIES)]


def write_inat18(root: str,
                 rng: np.random.Generator,
                 all_classes: bool = True,
                 head_counts: Sequence[Tuple[int, int]] = INAT18_HEAD,
                 long_side: Tuple[int, int] = (160, 400)) -> str:
    """iNat18: ``{train,val}2018.json`` and
    ``train_val2018/<supercategory>/<category_id>/<hash>.jpg``.

    Args:
        root: The data root to write (``data/inat18``).
        rng: Source of randomness.
        all_classes: Give every one of the 8142 categories a (small)
            training image, as the real set does.
        head_counts: ``(category_id, training images)`` of the classes with
            several images (and 2 val images each).
        long_side: Range of the head images' long side.

    Returns:
        ``root``.
    """
    head = dict(head_counts)
    order = list(range(len(head)))

    def image(category: int, size: Tuple[int, int]) -> str:
        name = (f'train_val2018/{_super(category)}/{category}/'
                f'{_hex(rng)}.jpg')
        label = order[list(head).index(category)] if category in head \
            else category % len(head)
        write_image(osp.join(root, name),
                    class_image(label, len(head), *size, rng))
        return name

    train = []
    for step in range(max(head.values())):  # classes interleaved
        for category, count in head.items():
            if step < count:
                train.append((image(category, image_size(rng, *long_side)),
                              category))
    if all_classes:
        for category in range(INAT18_NUM_CLASSES):
            if category not in head:
                train.append((image(category, (24, 32)), category))
    val = [(image(category, image_size(rng, *long_side)), category)
           for _ in range(2) for category in head]
    _write_json(osp.join(root, 'train2018.json'), _inat18_json(train, 0))
    _write_json(
        osp.join(root, 'val2018.json'), _inat18_json(val, len(train)))
    return root


def write_places205(root: str, rng: np.random.Generator) -> str:
    """Places205: ``trainvalsplit_places205/{train,val}_places205.csv``
    (``<letter>/<class>/<file> <official label>``) and 256 x 256 JPEGs under
    ``data/vision/torralba/deeplearning/images256/``.

    Args:
        root: The data root to write (``data/places205``).
        rng: Source of randomness.

    Returns:
        ``root``.
    """
    from mmpretrain.datasets.categories import PLACES205_CATEGORIES
    split_lines: Dict[str, List[str]] = {'train': [], 'val': []}
    num = len(PLACES205_SAMPLE_CLASSES)
    for split, count in (('train', 4), ('val', 2)):
        for i in range(count):
            for j, name in enumerate(PLACES205_SAMPLE_CLASSES):
                rel = f'{name[0]}/{name}/gsun_{_hex(rng)}.jpg'
                kind = 'gray_jpeg' if (i, j) == (0, 0) else 'rgb_jpeg'
                write_image(osp.join(root, PLACES205_IMAGE_DIR, rel),
                            class_image(j, num, 256, 256, rng), kind)
                split_lines[split].append(
                    f'{rel} {PLACES205_CATEGORIES.index(name)}')
    for split, lines in split_lines.items():
        _write_lines(
            osp.join(root, 'trainvalsplit_places205',
                     f'{split}_places205.csv'), lines)
    _write_lines(
        osp.join(root, 'trainvalsplit_places205',
                 'categoryIndex_places205.csv'),
        [f'/{n[0]}/{n} {i}' for i, n in enumerate(PLACES205_CATEGORIES)])
    return root


def _clevr_scene(split: str, index: int, count: int, depth: float,
                 rng: np.random.Generator, size: Tuple[int, int]) -> dict:
    height, width = size
    objects = []
    for k in range(count):
        z = depth if k == 0 else depth + rng.uniform(0.2, 6.0)
        objects.append(dict(
            color=CLEVR_COLORS[int(rng.integers(len(CLEVR_COLORS)))],
            size='large' if rng.random() < 0.5 else 'small',
            shape=CLEVR_SHAPES[int(rng.integers(len(CLEVR_SHAPES)))],
            material='rubber', rotation=float(rng.uniform(0, 360)),
            **{'3d_coords': [float(rng.uniform(-3, 3)),
                             float(rng.uniform(-3, 3)), 0.35],
               'pixel_coords': [int(rng.integers(0, width)),
                                int(rng.integers(0, height)), float(z)]}))
    return dict(image_index=index, split=split,
                image_filename=f'CLEVR_{split}_{index:06d}.png',
                objects=objects, relationships={}, directions={})


def _render_clevr(scene: dict, size: Tuple[int, int]) -> np.ndarray:
    height, width = size
    img = np.full((height, width, 3), 128, np.uint8)
    yy, xx = np.mgrid[0:height, 0:width]
    for obj in scene['objects']:
        x, y, z = obj['pixel_coords']
        radius = max(2.0, 60.0 / z * width / 120)
        disk = (xx - x)**2 + (yy - y)**2 <= radius**2
        img[disk] = 40 + 25 * CLEVR_COLORS.index(obj['color'])
    return img


def write_clevr(root: str, rng: np.random.Generator,
                size: Tuple[int, int] = (80, 120)) -> str:
    """CLEVR_v1.0: ``scenes/CLEVR_{train,val}_scenes.json`` and RGBA PNGs
    ``images/{train,val}/CLEVR_<split>_<index>.png`` (CLEVR's own type;
    480 x 320 in the real set, ``size`` here).

    Args:
        root: The data root to write (``data/clevr``, CLEVR_v1.0).
        rng: Source of randomness.
        size: ``(height, width)`` of the images.

    Returns:
        ``root``.
    """
    depths = (7.5, 8.3, 8.8, 9.3, 9.8, 12.0)  # one per CLEVR/Dist bin
    for split, per_count in (('train', 2), ('val', 1)):
        scenes: List[dict] = []
        for count in range(3, 11):
            for k in range(per_count):
                index = len(scenes)
                scene = _clevr_scene(split, index, count,
                                     depths[(count + k) % len(depths)], rng,
                                     size)
                write_image(
                    osp.join(root, 'images', split, scene['image_filename']),
                    _render_clevr(scene, size), 'rgba_png')
                scenes.append(scene)
        _write_json(osp.join(root, 'scenes', f'CLEVR_{split}_scenes.json'),
                    dict(info=dict(split=split), scenes=scenes))
    return root


def _kitti_line(obj_type: str, z: float, rng: np.random.Generator) -> str:
    x1, y1 = rng.uniform(0, 1000), rng.uniform(100, 250)
    return (f'{obj_type} 0.00 0 {rng.uniform(-3, 3):.2f} {x1:.2f} {y1:.2f} '
            f'{x1 + 60:.2f} {y1 + 40:.2f} 1.50 1.60 3.90 '
            f'{rng.uniform(-8, 8):.2f} 1.70 {z:.2f} '
            f'{rng.uniform(-3, 3):.2f}')


def write_kitti(root: str, rng: np.random.Generator,
                size: Tuple[int, int] = (75, 248)) -> str:
    """KITTI object ``training/label_2/<id>.txt`` (15-field lines) and
    ``training/image_2/<id>.png`` (1242 x 375 in the real set; ``size``
    here); one image is stored as 16-bit PNG, one as grey + alpha.

    Args:
        root: The data root to write (``data/kitti``).
        rng: Source of randomness.
        size: ``(height, width)`` of the images.

    Returns:
        ``root``.
    """
    nearest = (None, 5.0, 12.0, 35.0)  # one per KITTI/Dist class
    for i in range(20):
        label = i % len(nearest)
        lines = [_kitti_line('Pedestrian', rng.uniform(3, 30), rng)]
        if nearest[label] is not None:
            lines.append(_kitti_line('Car', cast(float, nearest[label]), rng))
            lines.append(_kitti_line(KITTI_TYPES[1 + i % 2],
                                     cast(float, nearest[label]) + 10.0, rng))
        lines.append('DontCare -1 -1 -10 503.89 169.71 590.61 190.13 -1 -1 '
                     '-1 -1000 -1000 -1000 -10')
        _write_lines(osp.join(root, 'training', 'label_2', f'{i:06d}.txt'),
                     lines)
        write_image(osp.join(root, 'training', 'image_2', f'{i:06d}.png'),
                    class_image(label, len(nearest), *size, rng),
                    {3: 'rgb16_png', 7: 'gray_alpha_png'}.get(i, 'rgb_png'))
    return root


def _pickle(path: str, data: dict) -> None:
    os.makedirs(osp.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        pickle.dump(data, f, protocol=2)


def _cifar_images(labels: np.ndarray, num_classes: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Rows of 3072 uint8 (R plane, G plane, B plane), CIFAR's layout."""
    return np.stack([
        class_image(int(y), num_classes, 32, 32, rng).transpose(2, 0,
                                                                1).ravel()
        for y in labels
    ])


def write_cifar10(root: str, rng: np.random.Generator) -> str:
    """CIFAR-10 python version: ``cifar-10-batches-py/{data_batch_1..5,
    test_batch, batches.meta}`` (2 images per class per batch).

    Args:
        root: The data root to write (``data/cifar10``).
        rng: Source of randomness.

    Returns:
        ``root``.
    """
    from mmpretrain.datasets.categories import CIFAR10_CATEGORIES
    folder = osp.join(root, 'cifar-10-batches-py')
    batches = [f'data_batch_{i}' for i in range(1, 6)] + ['test_batch']
    for name in batches:
        labels = np.tile(np.arange(10), 2)
        _pickle(osp.join(folder, name), {
            'batch_label': name, 'labels': labels.tolist(),
            'data': _cifar_images(labels, 10, rng),
            'filenames': [f'{name}_{i}.png' for i in range(len(labels))]})
    _pickle(osp.join(folder, 'batches.meta'),
            {'label_names': list(CIFAR10_CATEGORIES),
             'num_cases_per_batch': 20, 'num_vis': 3072})
    return root


def write_cifar100(root: str, rng: np.random.Generator) -> str:
    """CIFAR-100 python version: ``cifar-100-python/{train,test,meta}``
    (2 training and 1 test image per class).

    Args:
        root: The data root to write (``data/cifar100``).
        rng: Source of randomness.

    Returns:
        ``root``.
    """
    from mmpretrain.datasets.categories import CIFAR100_CATEGORIES
    folder = osp.join(root, 'cifar-100-python')
    for name, per_class in (('train', 2), ('test', 1)):
        fine = np.tile(np.arange(100), per_class)
        _pickle(osp.join(folder, name), {
            'batch_label': name, 'fine_labels': fine.tolist(),
            'coarse_labels': (fine // 5).tolist(),
            'data': _cifar_images(fine, 100, rng),
            'filenames': [f'{name}_{i}.png' for i in range(len(fine))]})
    _pickle(osp.join(folder, 'meta'), {
        'fine_label_names': sorted(CIFAR100_CATEGORIES),
        'coarse_label_names': [f'superclass_{i}' for i in range(20)]})
    return root


def _idx(path: str, array: np.ndarray) -> None:
    """An idx file (MNIST): magic, big-endian dims, uint8 data."""
    os.makedirs(osp.dirname(path), exist_ok=True)
    magic = bytes([0, 0, 0x08, array.ndim])
    dims = b''.join(int(d).to_bytes(4, 'big') for d in array.shape)
    with open(path, 'wb') as f:
        f.write(magic + dims + array.astype(np.uint8).tobytes())


def write_mnist(root: str, rng: np.random.Generator) -> str:
    """MNIST extracted idx files ``{train,t10k}-{images-idx3,labels-idx1}
    -ubyte``: scikit-learn's 8 x 8 digits scaled to 28 x 28 (20 x 20 digit
    in a 28 x 28 frame, as MNIST).

    Args:
        root: The data root to write (``data/mnist``).
        rng: Source of randomness.

    Returns:
        ``root``.
    """
    import cv2
    from sklearn.datasets import load_digits
    digits = load_digits()
    for prefix, num in (('train', 100), ('t10k', 30)):
        pick = rng.permutation(len(digits.target))[:num]
        images = np.zeros((num, 28, 28), np.uint8)
        for k, i in enumerate(pick):
            glyph = (digits.images[i] * (255 / 16)).astype(np.uint8)
            images[k, 4:24, 4:24] = cv2.resize(
                glyph, (20, 20), interpolation=cv2.INTER_LINEAR)
        _idx(osp.join(root, f'{prefix}-images-idx3-ubyte'), images)
        _idx(osp.join(root, f'{prefix}-labels-idx1-ubyte'),
             digits.target[pick])
    return root


WRITERS: Dict[str, Callable[..., str]] = dict(
    imagenet=write_imagenet, inat18=write_inat18, places205=write_places205,
    clevr=write_clevr, kitti=write_kitti, cifar10=write_cifar10,
    cifar100=write_cifar100, mnist=write_mnist)


def make_sample_data(root: str,
                     formats: Sequence[str] = FORMATS,
                     seed: int = 0,
                     inat18_all_classes: bool = True,
                     progress: bool = False) -> Dict[str, str]:
    """Write sample datasets into ``<root>/<format>``.

    Args:
        root: Output folder (``data``: where the configs' ``data_root`` is).
        formats: Which of :data:`FORMATS` to write.
        seed: Seed of every image and annotation.
        inat18_all_classes: See :func:`write_inat18`.
        progress: Show a progress bar (with ETA) over the formats.

    Returns:
        ``{format: its data root}``.
    """
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f'formats must be among {FORMATS}, got {unknown}.')
    for name in formats:  # before writing anything
        check_writable(osp.join(root, name))
    roots = {}
    bar = tqdm(formats, desc='sample data', unit='dataset',
               disable=not progress)
    for name in bar:
        bar.set_postfix_str(name)
        rng = np.random.default_rng([seed, FORMATS.index(name)])
        kwargs = dict(all_classes=inat18_all_classes) \
            if name == 'inat18' else {}
        folder = osp.join(root, name)
        os.makedirs(folder, exist_ok=True)
        with open(osp.join(folder, MARKER), 'w') as f:
            f.write('written by pmsn_mm.datasets.sample_data\n')
        roots[name] = WRITERS[name](folder, rng, **kwargs)
    return roots


#: Marks folders :func:`make_sample_data` wrote (the only ones it writes).
MARKER = '.pmsn_mm_sample_data'


def check_writable(folder: str) -> None:
    """Refuse to write sample files into a folder holding other data.

    The writers replace annotation files: pointed at a real dataset, they
    would destroy its annotations.

    Args:
        folder: A format's output folder.

    Raises:
        FileExistsError: If ``folder`` holds files not written by us.
    """
    if not osp.isdir(folder) or not os.listdir(folder) or osp.isfile(
            osp.join(folder, MARKER)):
        return
    raise FileExistsError(
        f'{folder} already holds files that make_sample_data did not write '
        f'(e.g. {sorted(os.listdir(folder))[:3]}); writing sample data '
        'there would replace its annotation files. Choose another root '
        '(the sample data goes to <root>/<format>/).')
