"""Every linear-probe config trains the protocol of
``configs/recipes/evaluation.yaml`` (paper App. E.2, VISSL's defaults).

Each listed config is resolved as the runner builds it
(``tests._recipes.resolve_probe_recipe``: the model on the meta
device, the optimizer wrapper, the parameter schedulers stepped through the
run, the transforms) and every quantity of its row is compared, both ways;
deviations replace values and must differ from them; every trained probe
under ``configs/*/benchmarks/`` must be listed; the paper quotes of the
sources are checked against the paper quotes the project carries. The rules
of the table itself are unit-tested in tests/test_recipes/test_evaluation.py.
"""
import glob
import os.path as osp
import re

import pytest
import yaml
from mmengine.config import Config

from tests._configs import REPO
from tests._recipes import (ENTRY_KEYS, expected_probe_recipe, family_of,
                            load_evaluation_table, resolve_probe_recipe,
                            same_value, split_key)
from tests._recipes.paper_quotes import (QUOTES_FILE, load_quote_index,
                                         quotes_of)

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

RECIPES = osp.join(REPO, 'configs', 'recipes')
TABLE = osp.join(RECIPES, 'evaluation.yaml')
#: The paper's sentences the tables quote, carried with the project
#: (.dev_scripts/paper_quotes.py checks them against the paper).
QUOTES = load_quote_index(osp.join(REPO, QUOTES_FILE))
DATA = load_evaluation_table(TABLE)
LISTED = sorted(DATA['configs'])
A_PROBE = ('configs/pmsn/benchmarks/'
           'vit-small-p16-lastcls_8xb32-linear-steplr-28e_cifar100.py')


def mismatches(resolved: dict, expected: dict) -> list:
    """Every difference between a resolved config and its row."""
    problems = []
    for key, entry in sorted(expected.items()):
        if key not in resolved:
            problems.append(f'{key}: in the table, not resolved')
        elif not same_value(resolved[key], entry['value']):
            what = 'deviation' if 'reason' in entry else 'value'
            problems.append(f'{key}: config {resolved[key]!r} != {what} '
                            f'{entry["value"]!r} ({entry["key"]})')
    problems += [f'{key}: resolved ({resolved[key]!r}), no row'
                 for key in sorted(set(resolved) - set(expected))]
    return problems


def test_every_trained_probe_is_listed():
    """Every config under configs/*/benchmarks/ that trains (the kNN and
    logistic-regression benchmarks only evaluate) has a row, and every row
    a config."""
    trained = set()
    for path in glob.glob(osp.join(REPO, 'configs', '*', 'benchmarks',
                                   '*.py')):
        if Config.fromfile(path).get('train_dataloader') is not None:
            trained.add(osp.relpath(path, REPO))
    assert len(trained) >= 90
    assert sorted(trained - set(LISTED)) == []
    assert sorted(set(LISTED) - trained) == []


def test_every_key_has_a_known_scope():
    scopes = {''}
    for config in LISTED:
        entry = DATA['configs'][config]
        enc, rep, data = (entry[k] for k in ENTRY_KEYS)
        datasets = [data] if isinstance(data, str) else data
        fam = family_of(DATA, enc)
        scopes |= {fam, enc, f'{enc}.{rep}'} | set(datasets) | {
            f'{fam}.{d}' for d in datasets}
    for key in list(DATA['values']) + list(DATA['deviations']):
        scope, quantity = split_key(key)
        assert scope in scopes, key
        assert quantity.startswith('probe_'), key


def test_sources_are_paper_quotes_or_pinned_lines():
    with open(osp.join(RECIPES, 'sources.yaml')) as f:
        refs = set(yaml.safe_load(f)['repositories'])
    assert DATA['experiment'] == 'evaluation'
    assert DATA['title'] and DATA['paper']
    for key, entry in DATA['values'].items():
        source = entry['source']
        if source.startswith('paper:'):
            quotes = quotes_of(source)
            assert quotes, key
            for quote in quotes:
                assert quote in QUOTES, (key, quote)
        else:
            assert re.match(r'^[a-z0-9_]+:[^:\s]+:L\d+(-L\d+)?', source), \
                (key, source)
            assert source.split(':')[0] in refs, (key, source)
    for key, entry in DATA['deviations'].items():
        assert entry.get('reason'), key


@pytest.mark.parametrize('config', LISTED, ids=osp.basename)
def test_config_trains_the_evaluation_protocol(config):
    expected = expected_probe_recipe(DATA, config)
    resolved = resolve_probe_recipe(Config.fromfile(osp.join(REPO, config)))
    assert mismatches(resolved, expected) == []


# ------------------------------------------------------------ the resolver
def _probe() -> Config:
    return Config.fromfile(osp.join(REPO, A_PROBE))


def test_resolver_sees_a_changed_config():
    """The resolver reads the built objects, not the table: a config edit
    shows up in the quantity it changes."""
    cfg = _probe()
    cfg.model.head.bn_affine = False
    cfg.optim_wrapper.optimizer.nesterov = False
    cfg.param_scheduler[0].milestones = [10, 20]
    cfg.train_dataloader.dataset.pipeline[0].interpolation = 'bilinear'
    cfg.model.backbone.drop_path_rate = 0.1
    got = resolve_probe_recipe(cfg)
    assert got['probe_bn_affine'] is False
    assert got['probe_bn_weight_decay'] is None
    assert got['probe_nesterov'] is False
    assert got['probe_milestones'] == [10, 20]
    assert got['probe_train_transform'][0] == \
        'RandomResizedCrop(224, bilinear)'
    assert got['probe_frozen_trunk'] is False  # drop path is random


def test_resolver_refuses_what_is_no_vissl_probe():
    cfg = _probe()
    cfg.model.backbone.final_norm = False
    with pytest.raises(ValueError, match='lastCLS needs'):
        resolve_probe_recipe(cfg)
    cfg = _probe()
    cfg.model.head.in_channels = 100
    with pytest.raises(ValueError, match='the head reads 100 features'):
        resolve_probe_recipe(cfg)
    cfg = _probe()
    cfg.train_dataloader.dataset.pipeline.insert(
        0, dict(type='ColorJitter', brightness=0.4))
    with pytest.raises(ValueError, match='no description for the transform'):
        resolve_probe_recipe(cfg)
    cfg = _probe()
    cfg.val_evaluator = dict(type='MultiHeadAccuracy', topk=(1, ))
    with pytest.raises(ValueError, match='same topk'):
        resolve_probe_recipe(cfg)
    cfg = Config(_probe().to_dict())  # no file name, no {N}xb{B}
    with pytest.raises(ValueError, match='no "{N}xb{B}"'):
        resolve_probe_recipe(cfg)
