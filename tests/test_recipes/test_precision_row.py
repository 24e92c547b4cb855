"""The recipe tables' ``precision`` row (tests/_recipes/building.py): what
each optimizer wrapper type of a config trains in, and a config whose dtype
leaves its table's row is reported."""
import pytest
from mmengine.config import Config

from tests._recipes import training_precision
from tests.test_configs.test_recipes import recipe_mismatches


def _cfg(**wrapper) -> Config:
    return Config(dict(optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1),
                                          **wrapper)))


@pytest.mark.parametrize('wrapper,expected', [
    (dict(), 'fp32'),  # mmengine's default wrapper
    (dict(type='OptimWrapper'), 'fp32'),
    (dict(type='AmpOptimWrapper'), 'fp16'),  # mmengine autocasts to float16
    (dict(type='AmpOptimWrapper', dtype='bfloat16'), 'bf16'),
    (dict(type='DeviceAwareAmpOptimWrapper', dtype='bfloat16'), 'bf16'),
    (dict(type='DeviceAwareAmpOptimWrapper', dtype='float16'), 'fp16'),
])
def test_each_wrapper_reads_as_its_precision(wrapper, expected):
    assert training_precision(_cfg(**wrapper)) == expected


def test_an_unknown_autocast_dtype_is_refused():
    with pytest.raises(ValueError, match='float64'):
        training_precision(_cfg(type='DeviceAwareAmpOptimWrapper',
                                dtype='float64'))


def test_a_config_off_its_precision_row_is_reported():
    row = {'precision': dict(value='fp16', source='vicreg:main.py:L1')}
    deviation = {'precision': dict(value='bf16', reason='no scaler')}
    assert recipe_mismatches({'precision': 'bf16'}, deviation) == []
    assert recipe_mismatches({'precision': 'bf16'}, row) == [
        "precision: config 'bf16' != recipe 'fp16'"]
    assert recipe_mismatches({'precision': 'fp32'}, {}) == [
        "precision: config has 'fp32', the table no row (add it with its "
        'source)']
