"""Your own folder of images: the quick start of docs/own_data.md runs as
printed, and every image-folder config reads one setting, IMAGE_FOLDER.

The two documented commands (train PMSN on a folder, then the kNN
benchmark of its checkpoint) are read from the page and run through
``tools/train.py`` / ``tools/test.py`` with ``IMAGE_FOLDER`` set, on real
folders of generated JPEGs and PNGs (class sub-folders, nested folders, and
a flat folder), CPU-shrunk as the every-config test does
(tests/_config_runs.py ``shrink``: widths, batches, 2 iterations). The
checkpoint the page names (``epoch_300.pth`` of the full run) is the shrunk
run's last checkpoint.
"""
import glob
import os
import os.path as osp
import re
from typing import Dict, List

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS, MODELS

from pmsn_mm.datasets.sample_data import class_image, write_image
from pmsn_mm.models.priors import ClassPrior, UniformPrior
from tests._config_runs import shrink
from tests._configs import CONFIGS, REPO
from tests._tools import load_tool

DOC = osp.join(REPO, 'docs', 'own_data.md')
TRAIN = re.compile(r'^IMAGE_FOLDER=(\S+) python (tools/train\.py) (\S+) '
                   r'--work-dir (\S+)$')
TEST = re.compile(r'^IMAGE_FOLDER=(\S+) python (tools/test\.py) (\S+) '
                  r'(\S+)/epoch_300\.pth$')
#: Images per class folder of the generated tree (long-tailed).
COUNTS = {'heron': 14, 'ibis': 9, 'stork': 6}
IMAGE_FOLDER_CONFIGS = sorted(
    glob.glob(osp.join(CONFIGS, '**', '*image-folder*.py'), recursive=True))


def quick_start() -> List[str]:
    """The command lines of the first code block under '## Quick start'."""
    with open(DOC) as f:
        text = f.read()
    section = text.split('## Quick start', 1)[1]
    block = re.search(r'```bash\n(.*?)```', section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def write_class_tree(root: str) -> Dict[str, int]:
    """``root/<class>/...`` JPEGs and PNGs (every third one nested)."""
    rng = np.random.default_rng(0)
    for label, name in enumerate(sorted(COUNTS)):
        for i in range(COUNTS[name]):
            rel = f'nested/{i:02d}.png' if i % 3 == 2 else f'{i:02d}.jpg'
            size = (int(rng.integers(40, 90)), int(rng.integers(40, 90)))
            write_image(osp.join(root, name, rel),
                        class_image(label, len(COUNTS), *size, rng),
                        'rgb_png' if rel.endswith('.png') else 'rgb_jpeg')
    return dict(COUNTS)


def write_flat_folder(root: str, n: int = 8) -> None:
    rng = np.random.default_rng(1)
    for i in range(n):
        write_image(osp.join(root, f'img_{i}.jpg' if i % 2 else
                             f'img_{i}.png'),
                    class_image(i % 3, 3, 48, 64, rng),
                    'rgb_jpeg' if i % 2 else 'rgb_png')


def data_roots(node) -> List[str]:
    """Every ``data_root`` value in a (nested) config."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'data_root':
                found.append(value)
            found += data_roots(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            found += data_roots(value)
    return found


def train_size(line: str) -> int:
    """Images of the training set of the documented train config."""
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(osp.join(REPO, TRAIN.match(line).group(3)))
    return len(DATASETS.build(dict(cfg.train_dataloader.dataset,
                                   pipeline=[])))


def run_train(line: str, folder: str, tmp: str):
    """The documented train command, with IMAGE_FOLDER = ``folder``."""
    _, tool, config, work_dir = TRAIN.match(line).groups()
    cfg = Config.fromfile(osp.join(REPO, config))
    assert set(data_roots(cfg._cfg_dict.to_dict())) == {folder}
    shrink(cfg, work_dir)
    dumped = osp.join(tmp, osp.basename(config))
    cfg.dump(dumped)
    return load_tool(tool).main([dumped, '--work-dir', work_dir])


def run_test(line: str, folder: str, tmp: str) -> dict:
    """The documented test command; its checkpoint is the run's last."""
    _, tool, config, run_dir = TEST.match(line).groups()
    cfg = Config.fromfile(osp.join(REPO, config))
    assert set(data_roots(cfg._cfg_dict.to_dict())) == {folder}
    shrink(cfg, osp.join(tmp, 'eval'))
    dumped = osp.join(tmp, 'eval_' + osp.basename(config))
    cfg.dump(dumped)
    with open(osp.join(run_dir, 'last_checkpoint')) as f:
        checkpoint = f.read().strip()
    return load_tool(tool).main([dumped, checkpoint])


def test_quick_start_is_two_commands_on_one_folder():
    lines = quick_start()
    assert len(lines) == 2
    train, test = TRAIN.match(lines[0]), TEST.match(lines[1])
    assert train and test, lines
    assert train.group(1) == test.group(1)  # the same folder
    assert train.group(4) == test.group(4)  # the checkpoint of that run
    assert osp.isfile(osp.join(REPO, train.group(3)))
    assert osp.isfile(osp.join(REPO, test.group(3)))


def test_quick_start_on_class_folders(tmp_path, monkeypatch):
    folder = str(tmp_path / 'my_images')
    counts = write_class_tree(folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('IMAGE_FOLDER', folder)
    train_line, test_line = quick_start()
    runner = run_train(train_line, folder, str(tmp_path))
    assert runner.iter == 2
    # the class prior of the folder: one prototype per class folder,
    # p_k = D_k / D with D_k counted here by walking the tree
    walked = [sum(len(files) for _, _, files in os.walk(osp.join(folder, c)))
              for c in sorted(os.listdir(folder))]
    assert walked == [counts[c] for c in sorted(counts)]
    head = runner.model.head
    assert isinstance(head.prior, ClassPrior) and head.num_prototypes == 3
    torch.testing.assert_close(
        head.prior.probs.cpu(),
        torch.tensor(walked, dtype=torch.float64) / sum(walked))
    assert train_size(train_line) == sum(walked)
    metrics = run_test(test_line, folder, str(tmp_path))
    assert 0 <= metrics['knn/top1'] <= 100
    # queries: every 5th image of each class (14, 9, 6 -> 2 + 1 + 1)
    init_default_scope('mmpretrain')
    cfg = Config.fromfile(osp.join(REPO, TEST.match(test_line).group(3)))
    query = DATASETS.build(cfg.test_dataloader.dataset.query)
    memory = DATASETS.build(cfg.test_dataloader.dataset.memory)
    assert sorted(query.get_gt_labels().tolist()) == [0, 0, 1, 2]
    assert len(memory) == sum(walked) - 4


def test_quick_start_on_a_flat_folder(tmp_path, monkeypatch):
    folder = str(tmp_path / 'my_images')
    write_flat_folder(folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('IMAGE_FOLDER', folder)
    train_line, test_line = quick_start()
    runner = run_train(train_line, folder, str(tmp_path))
    assert runner.iter == 2
    head = runner.model.head
    assert type(head.prior) is UniformPrior and head.num_prototypes == 1024
    assert train_size(train_line) == 8
    # the kNN needs labels: refused, naming the folder and the fix
    with pytest.raises(ValueError, match=r"8 image file\(s\) but no class "
                       'sub-folder.*Put the images into one folder per '
                       'class'):
        run_test(test_line, folder, str(tmp_path))


@pytest.mark.parametrize('path', IMAGE_FOLDER_CONFIGS,
                         ids=lambda p: osp.relpath(p, CONFIGS))
def test_every_image_folder_config_reads_image_folder(path, tmp_path,
                                                      monkeypatch):
    folder = str(tmp_path / 'images')
    write_flat_folder(folder)
    monkeypatch.setenv('IMAGE_FOLDER', folder)
    cfg = Config.fromfile(path)
    assert set(data_roots(cfg._cfg_dict.to_dict())) == {folder}
    monkeypatch.delenv('IMAGE_FOLDER')
    default = Config.fromfile(path)
    assert set(data_roots(default._cfg_dict.to_dict())) == {
        'data/imagenet/train'}
    init_default_scope('mmpretrain')
    if cfg.get('train_dataloader') is None:  # an evaluation: labels needed
        assert cfg.test_dataloader.dataset.memory.split == 'train'
        assert cfg.test_dataloader.dataset.query.split == 'val'
        return
    dataset = DATASETS.build(dict(cfg.train_dataloader.dataset, pipeline=[]))
    assert len(dataset) == 8
    head = cfg.model.get('head') or {}
    if head.get('prior', {}).get('type') == 'ImageFolderPrior':
        built = MODELS.build(dict(head, in_channels=8))
        assert type(built.prior) is UniformPrior
        assert built.num_prototypes == (
            1024 if head.type == 'PMSNHead' else 3000)


def documented_prior_options() -> List[Dict[str, object]]:
    """The ``--cfg-options model.head...`` overrides docs/own_data.md
    prints, parsed as tools/train.py parses them."""
    import argparse

    from mmengine.config import DictAction
    with open(DOC) as f:
        text = f.read()
    found = re.findall(r'`--cfg-options (model\.head\.[^`]+)`', text)
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return [parser.parse_args(['--cfg-options'] + opts.split()).cfg_options
            for opts in found]


def test_documented_prior_overrides(tmp_path, monkeypatch):
    power, no_classes = documented_prior_options()
    tree, flat = str(tmp_path / 'tree'), str(tmp_path / 'flat')
    write_class_tree(tree)
    write_flat_folder(flat)
    init_default_scope('mmpretrain')
    config = osp.join(CONFIGS, 'pmsn',
                      'pmsn_vit-small-p16_32xb128-300e_image-folder.py')

    def head(folder, options):
        monkeypatch.setenv('IMAGE_FOLDER', folder)
        cfg = Config.fromfile(config)
        cfg.merge_from_dict(options)
        return MODELS.build(dict(cfg.model.head, in_channels=8))

    # a flat folder with the power law: p_k ∝ k^-0.25 over 1024 prototypes
    built = head(flat, power)
    k = torch.arange(1, 1025, dtype=torch.float64)
    assert built.num_prototypes == 1024
    torch.testing.assert_close(built.prior.probs.cpu(),
                               k**-0.25 / (k**-0.25).sum())
    # class folders ignored: MSN's uniform prior over 1024 prototypes
    built = head(tree, no_classes)
    assert type(built.prior) is UniformPrior and built.num_prototypes == 1024
    # the class folders otherwise decide
    assert head(tree, {}).num_prototypes == len(COUNTS)
