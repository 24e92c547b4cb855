"""pmsn_mm's configs name pmsn_mm's variants of upstream components
explicitly (importing pmsn_mm no longer swaps them in under upstream's
names): no resolved config names an upstream component that pmsn_mm has a
variant of, and every optimizer wrapper names pmsn_mm's constructor."""
import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import OPTIM_WRAPPER_CONSTRUCTORS

from pmsn_mm.config.config_types import iter_config_types
from pmsn_mm.engine.optimizers import CoalescedOptimWrapperConstructor
from tests._config_runs import RUNNABLE, config_id

#: Upstream type -> pmsn_mm's variant (docs/openmmlab.md).
VARIANTS = {
    'LARS': 'SyncFreeLARS',
    'SimCLR': 'SyncFreeSimCLR',
    'ColorJitter': 'ModuloHueColorJitter',
    'LoadImageFromFile': 'CheckedLoadImageFromFile',
}


@pytest.mark.parametrize('path', RUNNABLE, ids=config_id)
def test_configs_name_the_variants(path):
    cfg = Config.fromfile(path)
    upstream = [(key, value) for key, value in iter_config_types(cfg)
                if value.split('.')[-1] in VARIANTS]
    assert upstream == [], (
        f'{config_id(path)} names {upstream}: use '
        f'{[VARIANTS[v.split(".")[-1]] for _, v in upstream]}')
    wrapper = cfg.get('optim_wrapper')
    if wrapper is not None:
        init_default_scope('mmpretrain')
        constructor = OPTIM_WRAPPER_CONSTRUCTORS.get(
            wrapper.get('constructor', 'DefaultOptimWrapperConstructor'))
        assert issubclass(constructor, CoalescedOptimWrapperConstructor), (
            f'{config_id(path)}: optim_wrapper.constructor is '
            f'{constructor.__name__}')
