"""Pretrain -> convert -> evaluate, end to end, on real ImageNet-format files.

PMSN (the ImageNet power-law config, encoder narrowed) trains on the sample
ImageNet of make_sample_data; its EMA target encoder is exported with
tools/model_converters/pmsn_to_backbone.py --target; then, reading that
file the way configs/pmsn/benchmarks/README.md says: the lastCLS and
concat-4 linear probes (plain + BN heads) and the 1 % probe train with
tools/train.py and test with tools/test.py, and the kNN and 1 % logistic
regression benchmarks run with tools/test.py. Weights and features are
checked against an encoder loaded independently from the exported file.
"""
import importlib.util
import os.path as osp

import pytest
import torch
import torch.nn.functional as F
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import DATASETS, MODELS

from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.evaluation.functional.logistic_regression import \
    select_and_evaluate
from tests._config_runs import shrink, shrink_model
from tests._configs import CONFIGS, REPO

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

BENCH = osp.join(CONFIGS, 'pmsn', 'benchmarks')
PRETRAIN = osp.join(CONFIGS, 'pmsn',
                    'pmsn_vit-base-p16_16xb64-300e_in1k-power-law.py')
PROBES = {
    'lastcls': 'vit-base-p16-lastcls_8xb32-linear-steplr-28e_in1k.py',
    'concat4': 'vit-base-p16-concat4cls_8xb32-linear-steplr-28e_in1k.py',
    'lastcls-1pct':
    'vit-base-p16-lastcls_8xb32-linear-steplr-28e_in1k-1pct.py',
}
KNN = 'vit-base-p16-lastcls_knn-k20_in1k.py'
LOGREG = 'vit-base-p16-lastcls_logreg_in1k-1pct.py'


def _tool(*parts):
    spec = importlib.util.spec_from_file_location(
        f'tool_{parts[-1][:-3]}', osp.join(REPO, 'tools', *parts))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dump(cfg, path):
    cfg.dump(path)
    return path


@pytest.fixture(scope='module')
def pretrained(tmp_path_factory):
    """(working dir with data/imagenet, PMSN checkpoint, exported target)."""
    root = tmp_path_factory.mktemp('e2e')
    make_sample_data(str(root / 'data'), ['imagenet'])
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        cfg = shrink(Config.fromfile(PRETRAIN), str(root / 'pretrain'))
        _tool('train.py').main([_dump(cfg, str(root / 'pretrain.py'))])
        ckpt = str(root / 'pretrain' / 'epoch_1.pth')
        target = str(root / 'pmsn_target.pth')
        _tool('model_converters', 'pmsn_to_backbone.py').main(
            [ckpt, target, '--target'])
    return root, ckpt, target


def _target_state(ckpt):
    state = torch.load(ckpt, weights_only=True)['state_dict']
    prefix = 'target_net.module.0.'
    return {k[len(prefix):]: v for k, v in state.items()
            if k.startswith(prefix)}


@pytest.mark.parametrize('probe', sorted(PROBES))
def test_linear_probes_train_on_the_exported_target(probe, pretrained,
                                                    tmp_path, monkeypatch):
    root, ckpt, target = pretrained
    monkeypatch.chdir(root)
    cfg = shrink(Config.fromfile(osp.join(BENCH, PROBES[probe])),
                 str(tmp_path / 'probe'))
    config = _dump(cfg, str(tmp_path / 'probe.py'))
    # the README's way: the exported file as the encoder's (and neck's) init
    options = [f'model.backbone.init_cfg.checkpoint={target}']
    if cfg.model.get('neck'):
        options.append(f'model.neck.init_cfg.checkpoint={target}')
    runner = _tool('train.py').main([config, '--cfg-options', *options])
    assert runner.iter == 2
    state = runner.model.state_dict()
    encoder = _target_state(ckpt)
    for key, value in state.items():
        if key.startswith('backbone.'):
            torch.testing.assert_close(value, encoder[key[9:]], rtol=0,
                                       atol=0)
    if probe == 'concat4':  # the neck holds the encoder's final norm
        torch.testing.assert_close(state['neck.weight'],
                                   encoder['ln1.weight'])
    for name in ('head.probes.linear.weight',
                 'head.probes.bn_linear.fc.weight',
                 'head.probes.bn_linear.bn.running_mean'):
        assert name in state
    metrics = _tool('test.py').main(
        [config, osp.join(str(tmp_path / 'probe'), 'epoch_1.pth'),
         '--work-dir', str(tmp_path / 'test')])
    assert {'linear/top1', 'bn_linear/top1'} <= set(metrics)


def _independent_features(cfg, target, split_cfg):
    """Features by a plain ViT loaded strictly from the exported file."""
    init_default_scope('mmpretrain')
    backbone = dict(cfg.model.backbone, frozen_stages=-1, init_cfg=None)
    vit = MODELS.build(backbone)
    saved = torch.load(target, weights_only=True)['state_dict']
    vit.load_state_dict({k[9:]: v for k, v in saved.items()})
    vit.eval()
    dataset = DATASETS.build(split_cfg)
    mean = torch.tensor(cfg.data_preprocessor.mean).view(1, 3, 1, 1)
    std = torch.tensor(cfg.data_preprocessor.std).view(1, 3, 1, 1)
    feats, labels = [], []
    with torch.no_grad():
        for i in range(len(dataset)):
            item = dataset[i]
            img = item['inputs'].float()[None].flip(1)  # BGR -> RGB
            feats.append(vit((img - mean) / std)[-1][0])
            labels.append(int(item['data_samples'].gt_label))
    return torch.stack(feats), torch.tensor(labels)


def _weighted_knn_top1(bank, bank_y, queries, query_y, k, temperature):
    """MSN/DINO's weighted kNN, restated: cosine similarity, the k nearest
    vote exp(sim / T) for their class."""
    sim = F.normalize(queries, dim=1) @ F.normalize(bank, dim=1).T
    top, idx = sim.topk(min(k, len(bank)), dim=1)
    votes = torch.zeros(len(queries), int(bank_y.max()) + 1)
    votes.scatter_add_(1, bank_y[idx], (top / temperature).exp())
    return float((votes.argmax(1) == query_y).float().mean() * 100)


def _knn_config():
    """The shrunk kNN benchmark config, loaded in the main process."""
    cfg = Config.fromfile(osp.join(BENCH, KNN))
    shrink_model(cfg)
    cfg.test_dataloader.update(batch_size=8, num_workers=0,
                               persistent_workers=False)
    return cfg


def test_knn_of_the_exported_target(pretrained, tmp_path, monkeypatch):
    root, _, target = pretrained
    monkeypatch.chdir(root)
    cfg = _knn_config()
    metrics = _tool('test.py').main(
        [_dump(cfg, str(tmp_path / 'knn.py')), target, '--work-dir',
         str(tmp_path / 'knn')])
    memory, query = (cfg.test_dataloader.dataset[p]
                     for p in ('memory', 'query'))
    bank, bank_y = _independent_features(cfg, target, memory)
    queries, query_y = _independent_features(cfg, target, query)
    expected = _weighted_knn_top1(bank, bank_y, queries, query_y, 20, 0.07)
    assert metrics['knn/top1'] == pytest.approx(expected, abs=1e-6)
    # the sample images are class-coded: a label mix-up would give ~10 %
    assert metrics['knn/top1'] >= 50


def test_low_shot_logistic_regression_of_the_exported_target(
        pretrained, tmp_path, monkeypatch):
    root, _, target = pretrained
    monkeypatch.chdir(root)
    cfg = Config.fromfile(osp.join(BENCH, LOGREG))
    shrink_model(cfg)
    cfg.test_dataloader.update(batch_size=8, num_workers=0,
                               persistent_workers=False)
    metrics = _tool('test.py').main(
        [_dump(cfg, str(tmp_path / 'logreg.py')), target, '--work-dir',
         str(tmp_path / 'logreg')])
    memory, query = (cfg.test_dataloader.dataset[p]
                     for p in ('memory', 'query'))
    train_x, train_y = _independent_features(cfg, target, memory)
    test_x, test_y = _independent_features(cfg, target, query)
    assert len(train_y) == 30  # the 1 % list: 3 images of each class
    expected = select_and_evaluate(train_x.numpy(), train_y.numpy(),
                                   test_x.numpy(), test_y.numpy())
    assert metrics['logreg/top1'] == pytest.approx(expected.test_accuracy)
    assert metrics['logreg/best_c'] == expected.best_c


def test_knn_of_the_pretraining_checkpoint_says_it_in_one_line(
        pretrained, tmp_path, monkeypatch, capsys):
    """The pretraining checkpoint itself (online encoder + EMA target,
    projector, prototypes) evaluated by the kNN benchmark: one line says
    what the model takes and what it leaves, instead of mmengine's list of
    every unused key."""
    root, ckpt, _ = pretrained
    monkeypatch.chdir(root)
    cfg = _knn_config()
    _tool('test.py').main([_dump(cfg, str(tmp_path / 'knn.py')), ckpt,
                           '--work-dir', str(tmp_path / 'knn')])
    out = capsys.readouterr()
    printed = out.out + out.err
    state = torch.load(ckpt, weights_only=True)['state_dict']
    backbone = sum(k.startswith('backbone.') for k in state)
    target = sum(k.startswith('target_net.') for k in state)
    assert (f'{ckpt}: the model takes all {backbone} of its weights '
            f'(backbone.*: {backbone}); left {len(state) - backbone} this '
            'model does not use (') in printed
    assert f'target_net.*: {target}' in printed
    assert 'unexpected key in source state_dict' not in printed
    assert len(printed) < 20000


def test_a_pretraining_config_cannot_be_tested(pretrained):
    _, ckpt, _ = pretrained
    with pytest.raises(ValueError, match='has no test loop .* training-only '
                       'config. To evaluate a pretrained encoder use a '
                       'benchmark config'):
        _tool('test.py').main([PRETRAIN, ckpt])


def test_a_checkpoint_without_the_encoder_is_refused(pretrained, tmp_path,
                                                     monkeypatch):
    root, ckpt, _ = pretrained
    monkeypatch.chdir(root)
    bare = str(tmp_path / 'bare.pth')  # keys without the backbone. prefix
    torch.save(dict(state_dict=_target_state(ckpt)), bare)
    cfg = Config.fromfile(osp.join(BENCH, KNN))
    shrink_model(cfg)
    with pytest.raises(ValueError, match=r'bare\.pth lacks \d+ of the '
                       r"model's \d+ weights \(e\.g\. \['backbone\."):
        _tool('test.py').main([_dump(cfg, str(tmp_path / 'k.py')), bare])


def test_out_names_what_it_writes(tmp_path):
    with pytest.raises(SystemExit):
        _tool('test.py').parse_args(['c.py', 'x.pth', '--out', 'r.json'])
    args = _tool('test.py').parse_args(['c.py', 'x.pth', '--out', 'r.pkl'])
    assert args.out == 'r.pkl'
