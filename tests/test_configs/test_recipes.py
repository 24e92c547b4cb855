"""Every paper config trains the recipe of its table (configs/recipes/).

Each config listed in a recipe table is resolved as the runner builds it
(``tests._recipes.resolve_recipe``: model, data pre-processor or
pipeline, optimizer wrapper, parameter schedulers stepped through the run,
loops, sampler) and every quantity of its row is compared; a deliberate
deviation is a listed row with its reason. The lr and weight-decay curves of
the whole run are compared with the closed forms of the official schedules
(warm-up, then cosine; MSN's cosines span 1.25x the run), and the paper
quotes of the tables are checked against the paper's text.
"""
import glob
import math
import os
import os.path as osp
import re
import subprocess
import sys
from typing import Dict, List

import pytest

from pmsn_mm.datasets.sample_data import make_sample_data
from tests._configs import REPO
from tests._recipes import (expected_recipe, load_recipe_table, resolve_recipe,
                            same_value)
from tests._recipes.paper_quotes import (NOT_TABLES, QUOTES_FILE,
                                         load_quote_index, quotes_of)

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

RECIPES = osp.join(REPO, 'configs', 'recipes')
#: The paper's sentences the tables quote, carried with the project
#: (.dev_scripts/paper_quotes.py checks them against the paper).
QUOTES = load_quote_index(osp.join(REPO, QUOTES_FILE))
#: Tables of pretraining experiments (evaluation.yaml: probes, its own test).
TABLES = sorted(
    p for p in glob.glob(osp.join(RECIPES, '*.yaml'))
    if not osp.basename(p).startswith('_')
    and osp.basename(p) not in NOT_TABLES + ('evaluation.yaml', ))
#: Resolved quantities that need no row (compared where a table has one):
#: bookkeeping, and where the cosine starts (the warm-up's end unless a
#: table says otherwise).
UNTABLED = {'auto_scale_base_batch', 'lr_schedule_start_epoch'}


def _listed() -> List[tuple]:
    return [(table, config) for table in TABLES
            for config in load_recipe_table(table)['configs']]


LISTED = _listed()


@pytest.fixture(scope='module')
def sample_cwd(tmp_path_factory):
    """A working directory whose data/ holds every sample dataset (the
    class prior counts the sample iNat18 annotations at build time)."""
    root = tmp_path_factory.mktemp('recipes')
    make_sample_data(str(root / 'data'))
    return str(root)


_RESOLVED: Dict[str, dict] = {}


def _resolve(config: str, cwd: str) -> dict:
    if config not in _RESOLVED:
        old = os.getcwd()
        os.chdir(cwd)
        try:
            _RESOLVED[config] = resolve_recipe(osp.join(REPO, config))
        finally:
            os.chdir(old)
    return _RESOLVED[config]


def recipe_mismatches(resolved: dict, expected: Dict[str, dict]) -> List[str]:
    """Every difference between a resolved config and its table row."""
    problems = []
    for key, entry in sorted(expected.items()):
        if key not in resolved:
            problems.append(f'{key}: in the table, not resolved from the '
                            'config')
        elif not same_value(resolved[key], entry['value']):
            what = 'deviation' if 'reason' in entry else 'recipe'
            problems.append(f'{key}: config {resolved[key]!r} != {what} '
                            f'{entry["value"]!r}')
    for key in sorted(resolved):
        if key.startswith('_') or key in UNTABLED or key in expected:
            continue
        problems.append(f'{key}: config has {resolved[key]!r}, the table no '
                        'row (add it with its source)')
    return problems


def schedule_mismatches(curve: List[float], iters_per_epoch: int, start: float,
                        peak: float, warmup_epochs: float, final: float,
                        length_epochs: float) -> List[str]:
    """Where a per-iteration curve leaves the official warm-up + cosine.

    The official schedule (e.g. MSN's WarmupCosineSchedule) at step s:
    linear from ``start`` to ``peak`` over W warm-up steps, then
    ``final + (peak - final) (1 + cos(pi (s - W) / (T - W))) / 2`` reaching
    ``final`` at step T. The official code steps before each iteration's
    update and mmengine after it, so iteration i of the config must lie
    between the official values at steps i and i + 1.
    """
    w = warmup_epochs * iters_per_epoch
    t = length_epochs * iters_per_epoch

    def official(s: float) -> float:
        if s < w:
            return start + s / w * (peak - start)
        return final + (peak - final) * 0.5 * (
            1 + math.cos(math.pi * (s - w) / (t - w)))

    problems = []
    for i, value in enumerate(curve):
        a, b = official(i), official(i + 1)
        slack = 1e-9 * max(abs(a), abs(b))
        if not min(a, b) - slack <= value <= max(a, b) + slack:
            problems.append(f'iteration {i}: {value:.6g} outside '
                            f'[{min(a, b):.6g}, {max(a, b):.6g}]')
    return problems


def test_tables_cover_every_paper_config():
    listed = {config for _, config in LISTED}
    paper = set()
    for folder in ('pmsn', 'class_stratified', 'vicreg', 'data2vec',
                   'pswav', 'simclr'):
        for path in glob.glob(osp.join(REPO, 'configs', folder, '*.py')):
            name = osp.basename(path)
            if 'cpu' in name or '-toy' in name or 'mini' in name:
                continue  # CPU-scale studies, not paper recipes
            paper.add(osp.relpath(path, REPO))
    assert len(paper) >= 20
    assert sorted(paper - listed) == []
    assert sorted(c for c in listed
                  if not osp.isfile(osp.join(REPO, c))) == []


@pytest.mark.parametrize('table', TABLES, ids=osp.basename)
def test_table_sources_and_quotes(table):
    import yaml
    with open(osp.join(RECIPES, 'sources.yaml')) as f:
        refs = set(yaml.safe_load(f)['repositories'])
    data = load_recipe_table(table)
    assert data['experiment'] == osp.splitext(osp.basename(table))[0]
    assert data['title'] and data['paper'] and data['configs']
    entries = dict(data['values'])
    for own in data['configs'].values():
        entries.update((own or {}).get('values') or {})
    for key, entry in entries.items():
        source = entry['source']
        if source.startswith('paper:'):
            assert quotes_of(source), f'{key}: {source!r} quotes nothing'
            for part in quotes_of(source):
                assert part in QUOTES, (
                    f'{key}: {part!r} is not among the paper quotes of '
                    f'{QUOTES_FILE} (.dev_scripts/paper_quotes.py)')
        elif re.match(r'^[a-z0-9_]+:', source) and \
                source.split(':')[0] in refs:
            assert re.match(r'^[a-z0-9_]+:[^:\s]+:L\d+', source), (key,
                                                                   source)
        else:
            # a statement about the value itself ('no ...') is allowed
            # only where the value is null / unused
            assert entry['value'] is None or source.startswith('no '), (
                f'{key}: source {source!r} is neither a paper quote nor '
                'a pinned repository line')


@pytest.mark.parametrize('table,config', LISTED,
                         ids=[osp.basename(c) for _, c in LISTED])
def test_config_trains_its_recipe(table, config, sample_cwd):
    data = load_recipe_table(table)
    expected = expected_recipe(data, config)
    resolved = _resolve(config, sample_cwd)
    assert recipe_mismatches(resolved, expected) == []
    # the lr in the config is for the config's own global batch
    assert resolved['auto_scale_base_batch'] == resolved['global_batch']


@pytest.mark.parametrize('table,config', LISTED,
                         ids=[osp.basename(c) for _, c in LISTED])
def test_schedules_follow_the_official_curves(table, config, sample_cwd):
    row = {k: e['value'] for k, e in
           expected_recipe(load_recipe_table(table), config).items()}
    resolved = _resolve(config, sample_cwd)
    per_epoch = resolved['_iters_per_epoch']
    if row['lr_schedule'] == 'cosine':
        assert schedule_mismatches(
            resolved['_lr_curve'], per_epoch, row['warmup_start_lr'],
            row['lr'], row['warmup_epochs'], row['final_lr'],
            row['lr_schedule_epochs'])[:3] == []
    if row['weight_decay_schedule'] == 'cosine':
        assert schedule_mismatches(
            resolved['_wd_curve'], per_epoch, row['weight_decay'],
            row['weight_decay'], 0, row['weight_decay_end'],
            row['weight_decay_epochs'])[:3] == []
    else:
        assert set(resolved['_wd_curve']) == {row['weight_decay']}


def test_comparison_catches_wrong_values(sample_cwd):
    """The checks fail on the deviations the audit found (saturation 0.2,
    cosines ending with the run instead of at 1.25x, no Sinkhorn)."""
    table = load_recipe_table(osp.join(RECIPES, 'inat18_pmsn.yaml'))
    config = 'configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py'
    expected = expected_recipe(table, config)
    resolved = dict(_resolve(config, sample_cwd))
    assert recipe_mismatches(resolved, expected) == []
    wrong = dict(resolved, **{'views.0.saturation': 0.2, 'sinkhorn': False})
    assert [p.split(':')[0] for p in recipe_mismatches(wrong, expected)] == [
        'sinkhorn', 'views.0.saturation']
    # the old schedule: the cosine ended with the run (T = 300 epochs)
    per_epoch, epochs = resolved['_iters_per_epoch'], 300
    old = []
    for i in range(epochs * per_epoch):
        s, w, t = i, 15 * per_epoch, epochs * per_epoch
        old.append(2e-4 + s / (w - 1) * 8e-4 if s < w else
                   1e-6 + (1e-3 - 1e-6) * 0.5 *
                   (1 + math.cos(math.pi * (s - w) / (t - w))))
    assert schedule_mismatches(old, per_epoch, 2e-4, 1e-3, 15, 1e-6, 375)
    assert not schedule_mismatches(resolved['_lr_curve'], per_epoch, 2e-4,
                                   1e-3, 15, 1e-6, 375)


def test_docs_recipes_is_generated_from_the_tables():
    result = subprocess.run(
        [sys.executable, osp.join(REPO, '.dev_scripts', 'recipes_to_md.py'),
         '--check'], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
