"""Tiny fake copies of the original downstream-dataset layouts (test helper).

Only annotation files are written (the datasets never read images to build
their lists); each writer returns the data root.
"""
import json
import os
import os.path as osp
from typing import Dict, List, Sequence, Tuple

#: One (type, z) pair per object line of a KITTI label file.
KittiObjects = Sequence[Tuple[str, object]]


def clevr_scene(name: str, depths: Sequence[float]) -> dict:
    """A CLEVR scene with one object per depth (pixel_coords = [x, y, d])."""
    return dict(
        image_filename=name,
        objects=[
            dict(shape='cube', pixel_coords=[10 * i, 20, d])
            for i, d in enumerate(depths)
        ])


def write_clevr(root: str, train: List[dict], val: List[dict]) -> str:
    """Write ``<root>/CLEVR_v1.0/scenes/CLEVR_{train,val}_scenes.json``."""
    data_root = osp.join(root, 'CLEVR_v1.0')
    os.makedirs(osp.join(data_root, 'scenes'), exist_ok=True)
    for split, scenes in (('train', train), ('val', val)):
        with open(osp.join(data_root, 'scenes',
                           f'CLEVR_{split}_scenes.json'), 'w') as f:
            json.dump(dict(info={}, scenes=scenes), f)
    return data_root


def kitti_line(obj_type: str, z: object) -> str:
    """One 15-field KITTI object label line with location z = ``z``."""
    return (f'{obj_type} 0.00 0 -1.57 100.0 150.0 200.0 250.0 '
            f'1.50 1.60 3.90 1.00 1.70 {z} -1.50')


def write_kitti(root: str, labels: Dict[str, KittiObjects]) -> str:
    """Write ``<root>/kitti/training/label_2/<id>.txt`` per image id."""
    data_root = osp.join(root, 'kitti')
    label_dir = osp.join(data_root, 'training', 'label_2')
    os.makedirs(label_dir, exist_ok=True)
    for image_id, objects in labels.items():
        with open(osp.join(label_dir, f'{image_id}.txt'), 'w') as f:
            f.writelines(kitti_line(t, z) + '\n' for t, z in objects)
    return data_root


def inat18_json(images: Sequence[Tuple[int, str, int]]) -> dict:
    """iNat18-style JSON from ``(image_id, file_name, category_id)``.

    Annotations are written in reverse order so that a parser relying on
    list positions instead of ``image_id`` would mislabel them.
    """
    return dict(
        info={},
        images=[dict(id=i, file_name=f, width=8, height=8)
                for i, f, _ in images],
        annotations=[dict(id=100 + i, image_id=i, category_id=c)
                     for i, _, c in reversed(images)],
        categories=[dict(id=c, name=str(c)) for c in {c for *_, c in images}])


def write_inat18(root: str, train: dict, val: dict) -> str:
    """Write ``<root>/inat18/{train,val}2018.json``."""
    data_root = osp.join(root, 'inat18')
    os.makedirs(data_root, exist_ok=True)
    for name, data in (('train2018.json', train), ('val2018.json', val)):
        with open(osp.join(data_root, name), 'w') as f:
            json.dump(data, f)
    return data_root
