"""tools/analysis_tools: K-means (Fig. 1), nearest neighbours (Fig. 3) and the
prototype gallery, run in-process on a 2-iteration toy checkpoint."""
import importlib.util
import json
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

from pmsn_mm.evaluation.functional import usage_counts
from tests._configs import CONFIGS, REPO
from tests._tools import import_beside_tools

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

PNG_HEADER = b'\x89PNG\r\n\x1a\n'
TOY = osp.join(CONFIGS, 'pmsn',
               'pmsn_vit-mini-p4_1xb64-cpu-toy_power-law-overlay.py')
TINY = f"""
_base_ = '{TOY}'
custom_hooks = []
train_dataloader = dict(batch_size=16, dataset=dict(num_samples=64))
train_cfg = dict(max_iters=2)
default_hooks = dict(checkpoint=dict(interval=2))
"""


def _load_tool(name):
    spec = importlib.util.spec_from_file_location(
        f'analysis_tool_{name}',
        osp.join(REPO, 'tools', 'analysis_tools', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kmeans_tool = _load_tool('kmeans_uniform_prior')
nn_tool = _load_tool('nearest_neighbors')
gallery_tool = _load_tool('prototype_gallery')
agreement = import_beside_tools('tools/analysis_tools/neighbor_agreement.py')
cosine_knn = agreement.cosine_knn
neighbor_agreement = agreement.neighbor_agreement
chance_agreement = agreement.chance_agreement
top_samples_per_prototype = gallery_tool.top_samples_per_prototype


def _assert_png(path):
    with open(path, 'rb') as f:
        data = f.read()
    assert data[:8] == PNG_HEADER and len(data) > 1000


@pytest.fixture(scope='module')
def toy_checkpoint(tmp_path_factory):
    """(config path, checkpoint path) of PMSN trained 2 iterations."""
    root = tmp_path_factory.mktemp('toy_ckpt')
    config = str(root / 'tiny_pmsn.py')
    with open(config, 'w') as f:
        f.write(TINY)
    cfg = Config.fromfile(config)
    cfg.work_dir = str(root / 'work')
    cfg.experiment_name = 'analysis_tools_ckpt'
    Runner.from_cfg(cfg).train()
    return config, osp.join(cfg.work_dir, 'iter_2.pth')


@pytest.mark.parametrize('tool', [kmeans_tool, nn_tool, gallery_tool])
def test_help(tool, capsys):
    with pytest.raises(SystemExit) as exc:
        tool.parse_args(['--help'])
    assert exc.value.code == 0
    assert '--out-dir' in capsys.readouterr().out


# ------------------------------------------------------------ Fig. 1
@pytest.mark.parametrize('seed_args', [[], ['--seed', '7']])
def test_kmeans_cuts_the_large_cluster(seed_args, tmp_path, capsys):
    report = kmeans_tool.main(['--out-dir', str(tmp_path)] + seed_args)
    _assert_png(tmp_path / 'kmeans_imbalanced.png')
    counts = np.array(report['counts'])  # counts[true][kmeans]
    assert report['true_sizes'] == [900, 100]
    # no K-means cluster is the true small cluster ...
    for c in range(2):
        assert not (counts[1, c] == 100 and counts[0, c] == 0)
    # ... because the large cluster is cut: >= 200 of its 900 points in each
    assert counts[0].min() >= 200
    # and the small cluster is merged with part of the large one
    merged = int(np.argmax(counts[1]))
    assert counts[1, merged] == 100 and counts[0, merged] >= 200
    assert 'true cluster 0 (left, 900 points)' in capsys.readouterr().out
    with open(tmp_path / 'kmeans_imbalanced.json') as f:
        assert json.load(f)['counts'] == report['counts']


def test_kmeans_balanced_recovers_the_clusters(tmp_path):
    report = kmeans_tool.main(['--out-dir', str(tmp_path), '--balanced'])
    _assert_png(tmp_path / 'kmeans_balanced.png')
    counts = np.array(report['counts'])
    # a permutation matrix times 500: each true cluster is one K-means one
    assert sorted(counts.ravel().tolist()) == [0, 0, 500, 500]
    assert counts[0].max() == 500 and counts[:, 0].max() == 500


def test_two_clusters_and_contingency():
    two_clusters, contingency = kmeans_tool.two_clusters, \
        kmeans_tool.contingency
    points, labels, sep = two_clusters(seed=3)
    assert points.shape == (1000,
                            2) and np.bincount(labels).tolist() == [900, 100]
    assert (points[labels == 0, 0] < sep).all()
    assert (points[labels == 1, 0] > sep).all()
    table = contingency(np.array([0, 0, 1, 1, 1]), np.array([1, 0, 0, 0, 2]))
    assert table.tolist() == [[1, 1, 0], [2, 0, 1]]


# ------------------------------------------------------------ Fig. 3
def test_cosine_knn_matches_brute_force():
    feats = torch.randn(20, 5, generator=torch.Generator().manual_seed(0))
    nbrs = cosine_knn(feats, 3, chunk_size=7)
    normed = feats / feats.norm(dim=1, keepdim=True)
    sim = normed @ normed.T
    for i in range(20):
        order = [j for j in sim[i].argsort(descending=True).tolist() if j != i]
        assert nbrs[i].tolist() == order[:3]
    with pytest.raises(ValueError,
                       match=r'k must be an int in \[1, 19\] but is 20'):
        cosine_knn(feats, 20)


def test_agreement_by_hand():
    labels = np.array([0, 0, 1, 1])
    nbrs = torch.tensor([[1, 2], [0, 3], [3, 0], [2, 1]])
    assert neighbor_agreement(nbrs, labels) == pytest.approx(0.5)
    assert neighbor_agreement(nbrs[[2]], labels, [2]) == pytest.approx(0.5)
    # 2 * (2 * 1) / (4 * 3)
    assert chance_agreement(labels) == pytest.approx(1 / 3)


def test_nearest_neighbors_tool(toy_checkpoint, tmp_path, capsys):
    config, ckpt = toy_checkpoint
    report = nn_tool.main([
        config, ckpt, '--out-dir',
        str(tmp_path), '--num-samples', '40', '--k', '4', '--num-refs', '3'
    ])
    _assert_png(tmp_path / 'nearest_neighbors.png')
    assert report['num_samples'] == 40
    assert set(report['agreement']) == {'digit', 'background'}
    for key in ('digit', 'background'):
        assert 0 <= report['agreement'][key] <= 1
        assert 0 < report['chance'][key] < 1
    assert len(report['references']) == 3
    for ref, nbrs in zip(report['references'], report['neighbors']):
        assert len(nbrs) == 4 and ref not in nbrs
    with open(tmp_path / 'nearest_neighbors.json') as f:
        assert json.load(f)['agreement'] == report['agreement']
    assert 'sharing the label' in capsys.readouterr().out


def test_nearest_neighbor_captions_are_spelled_out():
    labels = dict(digit=np.array([5, 3]), background=np.array([9, 1]))
    assert nn_tool._caption(labels, 0) == 'digit 5\nbackground 9'
    assert nn_tool._caption(dict(gt_label=np.array([7])), 0) == 'class 7'


# ------------------------------------------------------------ Figs. 2/4
def test_usage_counts_and_top_samples():
    probs = torch.tensor([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.8, 0.1]])
    assert usage_counts(probs).tolist() == [2, 1, 0]
    top = top_samples_per_prototype(probs, 2)
    assert top.tolist() == [[0, 1], [2, 1], [0, 1]]
    assert top_samples_per_prototype(probs, 10).shape == (3, 3)


def test_prototype_gallery_tool(toy_checkpoint, tmp_path, capsys):
    config, ckpt = toy_checkpoint
    report = gallery_tool.main([
        config, ckpt, '--out-dir',
        str(tmp_path), '--num-samples', '40', '--top-n', '3'
    ])
    _assert_png(tmp_path / 'prototype_gallery.png')
    assert report['num_prototypes'] == 10
    assert sum(report['usage_counts']) == 40
    assert report['num_used'] == sum(c > 0 for c in report['usage_counts'])
    assert all(len(v) == 3 for v in report['gallery'].values())
    with open(tmp_path / 'prototype_usage.json') as f:
        assert json.load(f)['usage_counts'] == report['usage_counts']
    out = capsys.readouterr().out
    assert 'usage counts' in out and 'prototype' in out
