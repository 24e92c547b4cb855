"""Folders of real images for the image-folder tests (test helper)."""
import os.path as osp
from typing import Dict

import numpy as np

from pmsn_mm.datasets.sample_data import class_image, write_image


def write_class_tree(root, counts: Dict[str, int]) -> str:
    """``root/<class>/NN.jpg`` and ``root/<class>/deep/NN.png`` (every other
    image one folder deeper), ``counts[class]`` decodable images per class.

    Returns:
        ``str(root)``.
    """
    rng = np.random.default_rng(0)
    for label, name in enumerate(sorted(counts)):
        for i in range(counts[name]):
            rel = f'{i:02d}.jpg' if i % 2 == 0 else f'deep/{i:02d}.png'
            write_image(osp.join(root, name, rel),
                        class_image(label, len(counts), 12, 12, rng),
                        'rgb_jpeg' if rel.endswith('.jpg') else 'rgb_png')
    return str(root)


def write_flat_folder(root, n: int = 4) -> str:
    """``root/0.png`` ... ``root/<n-1>.png``, no class folders.

    Returns:
        ``str(root)``.
    """
    rng = np.random.default_rng(1)
    for i in range(n):
        write_image(osp.join(root, f'{i}.png'),
                    class_image(0, 1, 12, 12, rng), 'rgb_png')
    return str(root)
