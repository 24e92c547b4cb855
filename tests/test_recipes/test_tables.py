"""The recipe tables' rules (tests/_recipes/tables.py): bases merged, the
row of a config, deviations, absent view groups, value comparison and the
``{N}xb{B}`` of a config name, on tables written here."""
import pytest
import yaml

from tests._recipes import (NAME_BATCH, expected_recipe, load_recipe_table,
                            name_batch, round_value, same_value)


def _write(path, **table) -> str:
    path.write_text(yaml.safe_dump(table))
    return str(path)


def test_base_values_are_overridden_and_configs_are_the_files_own(tmp_path):
    _write(tmp_path / '_base.yaml',
           values=dict(lr=dict(value=1.0, source='paper: a'),
                       epochs=dict(value=300, source='paper: b')),
           notes=['base note'], configs={'b.py': {}})
    path = _write(tmp_path / 't.yaml', experiment='t', base='_base',
                  values=dict(lr=dict(value=2.0, source='paper: c')),
                  notes=['own note'], configs={'c.py': {}})
    table = load_recipe_table(path)
    assert table['values']['lr']['value'] == 2.0
    assert table['values']['epochs']['value'] == 300
    assert table['notes'] == ['base note', 'own note']
    assert list(table['configs']) == ['c.py']


def test_unknown_table_keys_are_refused(tmp_path):
    with pytest.raises(ValueError, match='unknown keys'):
        load_recipe_table(_write(tmp_path / 't.yaml', value={}))


def _table(**deviations) -> dict:
    values = {'epochs': dict(value=300, source='paper: x'),
              'views.0.num_views': dict(value=2, source='paper: x'),
              'views.0.size': dict(value=224, source='paper: x'),
              'views.1.num_views': dict(value=None, source='no focal views'),
              'views.1.size': dict(value=96, source='paper: x')}
    return dict(values=values, deviations=deviations, configs={'c.py': {}})


def test_row_drops_absent_view_groups_and_marks_deviations():
    table = _table(epochs=dict(value=100, reason='shorter'))
    row = expected_recipe(table, 'c.py')
    assert sorted(row) == ['epochs', 'views.0.num_views', 'views.0.size']
    assert row['epochs'] == dict(value=100, reason='shorter', recipe=300)


def test_per_config_values_come_first():
    table = _table()
    table['configs']['c.py'] = dict(
        values={'epochs': dict(value=50, source='paper: y')})
    assert expected_recipe(table, 'c.py')['epochs']['value'] == 50


@pytest.mark.parametrize('deviation,match', [
    (dict(value=300, reason='none'), 'equals the recipe value'),
    (dict(value=100), 'needs a value and a reason'),
])
def test_bad_deviations_are_refused(deviation, match):
    with pytest.raises(ValueError, match=match):
        expected_recipe(_table(epochs=deviation), 'c.py')


def test_value_without_a_source_is_refused():
    table = _table()
    table['values']['lr'] = dict(value=1e-3)
    with pytest.raises(ValueError, match='needs a value and a source'):
        expected_recipe(table, 'c.py')


def test_same_value_tolerance_types_and_lists():
    assert same_value(0.1 + 0.2, 0.3)
    assert not same_value(0.3, 0.3 * (1 + 1e-6))
    assert same_value([1, (2.0, 3)], (1, [2, 3.0]))
    assert not same_value([1, 2], [1, 2, 3])
    assert not same_value(True, 1)  # a bool is not a number here
    assert same_value('cosine', 'cosine') and same_value(None, None)


def test_round_value_keeps_12_digits_and_lists_tuples():
    assert round_value(1 / 3) == 0.333333333333
    assert round_value((0.1 + 0.2, [2 / 3])) == [0.3, [0.666666666667]]
    assert round_value('x') == 'x' and round_value(7) == 7


def test_name_batch_reads_gpus_and_checks_the_per_gpu_batch():
    path = 'configs/pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-uniform.py'
    assert name_batch(path, 128) == (32, 128)
    assert NAME_BATCH.search('x_8xb32_y.py').groups() == ('8', '32')
    with pytest.raises(ValueError, match='says 128 images per GPU'):
        name_batch(path, 64)
    with pytest.raises(ValueError, match='no "{N}xb{B}"'):
        name_batch('configs/pmsn/pmsn_toy.py', 8)
