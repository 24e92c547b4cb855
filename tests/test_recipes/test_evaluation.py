"""The evaluation table's rules (scoped values, deviations, refusals) and
the naming of a probe's lr curve (tests/_recipes/evaluation.py), on tables
and curves written here."""
import math

import pytest
import yaml

from tests._recipes import (expected_probe_recipe, load_evaluation_table,
                            name_lr_schedule)


def _table(**deviations) -> dict:
    values = {'probe_lr': dict(value=0.01, source='paper: x'),
              'e.probe_arch': dict(value='vit-small', source='paper: x'),
              'in1k.probe_epochs': dict(value=28, source='paper: x')}
    return dict(values=values, deviations=deviations,
                configs={'c.py': dict(encoder='e', representation='lastcls',
                                      dataset='in1k')})


def test_scoped_values_and_deviations_make_the_row():
    table = _table(**{'in1k.probe_epochs': dict(value=14, reason='r')})
    row = expected_probe_recipe(table, 'c.py')
    assert row['probe_lr']['value'] == 0.01
    assert row['probe_arch']['value'] == 'vit-small'
    assert row['probe_epochs']['value'] == 14
    assert row['probe_epochs']['recipe'] == 28


def test_more_specific_scope_wins_and_other_scopes_do_not_apply():
    table = _table()
    table['values']['vit.probe_lr'] = dict(value=0.1, source='paper: y')
    table['values']['resnet.probe_lr'] = dict(value=9.0, source='paper: y')
    table['values']['cifar100.probe_epochs'] = dict(value=1, source='p: y')
    row = expected_probe_recipe(table, 'c.py')
    assert row['probe_lr']['value'] == 0.1
    assert row['probe_epochs']['value'] == 28


def test_deviation_equal_to_its_value_is_refused():
    table = _table(**{'in1k.probe_epochs': dict(value=28, reason='r')})
    with pytest.raises(ValueError, match='equals the value it replaces'):
        expected_probe_recipe(table, 'c.py')


def test_deviation_without_a_value_to_replace_is_refused():
    table = _table(probe_gamma=dict(value=0.5, reason='r'))
    with pytest.raises(ValueError, match='replaces no value'):
        expected_probe_recipe(table, 'c.py')


def test_deviation_without_a_reason_is_refused():
    table = _table(probe_lr=dict(value=0.1))
    with pytest.raises(ValueError, match='needs a value and a reason'):
        expected_probe_recipe(table, 'c.py')


def test_value_without_a_source_is_refused():
    table = _table()
    table['values']['probe_gamma'] = dict(value=0.1)
    with pytest.raises(ValueError, match='needs a value and a source'):
        expected_probe_recipe(table, 'c.py')


def test_table_with_unknown_keys_or_incomplete_entries_is_refused(tmp_path):
    path = tmp_path / 'evaluation.yaml'
    path.write_text(yaml.safe_dump(dict(values={}, datasets={})))
    with pytest.raises(ValueError, match='unknown keys'):
        load_evaluation_table(str(path))
    path.write_text(yaml.safe_dump(dict(configs={'c.py': dict(
        encoder='e', dataset='in1k')})))
    with pytest.raises(ValueError, match='lacks'):
        load_evaluation_table(str(path))


def test_schedule_names_vissl_curves():
    step = [0.01] * 8 + [0.001] * 8 + [1e-4] * 8 + [1e-5] * 4
    assert name_lr_schedule(step) == dict(probe_schedule='multistep',
                                          probe_milestones=[8, 16, 24],
                                          probe_gamma=0.1, probe_lr_end=None)
    cosine = [1e-4 + (0.01 - 1e-4) * (1 + math.cos(math.pi * e / 50)) / 2
              for e in range(50)]
    got = name_lr_schedule(cosine)
    assert got['probe_schedule'] == 'cosine'
    assert got['probe_lr_end'] == pytest.approx(1e-4)
    assert name_lr_schedule([0.01] * 5)['probe_schedule'] == 'constant'
    with pytest.raises(ValueError, match='neither multistep nor cosine'):
        name_lr_schedule([0.01, 0.02, 0.04, 0.01, 0.03])
