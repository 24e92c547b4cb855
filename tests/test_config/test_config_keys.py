"""Unknown config keys of pmsn_mm modules: the error lists the valid keys."""
import importlib.util
import os.path as osp

import pytest
from mmengine.registry import Registry
from mmpretrain import registry as mmpretrain_registry

from pmsn_mm.config import (apply_strict_config_keys, strict_config_keys,
                            valid_config_keys)
from pmsn_mm.config.config_keys import unknown_keys_message
from pmsn_mm.datasets import INat18
from pmsn_mm.engine.hooks import NonFiniteGuardHook, RNGStateHook
from tests._configs import REPO, TINY_PMSN, write_config


def _registered_pmsn_classes():
    for registry in vars(mmpretrain_registry).values():
        if isinstance(registry, Registry):
            for name, cls in registry.module_dict.items():
                # registered builder functions (ImageFolderPrior) get
                # Python's own unexpected-keyword error
                if isinstance(cls, type) and cls.__module__.startswith(
                        'pmsn_mm.'):
                    yield registry.name, name, cls


def test_every_registered_class_refuses_unknown_keys():
    classes = list(_registered_pmsn_classes())
    assert len(classes) >= 35
    for registry, name, cls in classes:
        valid = valid_config_keys(cls)
        assert valid is not None, f'{registry}.{name} is not checked'
        with pytest.raises(TypeError) as info:
            cls(no_such_key=1)  # refused before the constructor runs
        assert str(info.value).startswith(
            f"{cls.__name__} got unknown config key(s) ['no_such_key']"), \
            name


def test_keys_follow_kwargs_up_the_mro():
    keys = valid_config_keys(INat18)
    assert keys[:2] == ('data_root', 'split')
    assert {'pipeline', 'test_mode', 'lazy_init'} <= set(keys)
    assert valid_config_keys(RNGStateHook) == ()
    assert valid_config_keys(NonFiniteGuardHook) == ('action', 'max_skips')


def test_open_kwargs_are_not_checked():

    class Open:

        def __init__(self, a, **kwargs):
            self.kwargs = kwargs

    assert valid_config_keys(Open) is None
    assert strict_config_keys(Open)(1, anything=2).kwargs == dict(anything=2)


def test_wrapping_is_idempotent():

    class Closed:

        def __init__(self, a=1):
            self.a = a

    strict_config_keys(Closed)
    init = Closed.__init__
    strict_config_keys(Closed)
    assert Closed.__init__ is init
    apply_strict_config_keys()
    assert valid_config_keys(INat18)[:2] == ('data_root', 'split')


@pytest.mark.parametrize('unknown, valid, text', [
    (['tempreature'], ('temperature', 'prior'),
     "X got unknown config key(s) ['tempreature'] (did you mean "
     "'temperature'?); valid keys: temperature, prior."),
    (['zz', 'priorr', 'tempreature'], ('temperature', 'prior'),
     "X got unknown config key(s) ['priorr', 'tempreature', 'zz'] (did you "
     "mean 'prior' for 'priorr', 'temperature' for 'tempreature'?); valid "
     'keys: temperature, prior.'),
    (['zz'], ('temperature', ), "X got unknown config key(s) ['zz']; valid "
     'keys: temperature.'),
    (['tau'], (), "X got unknown config key(s) ['tau']; it takes no config "
     'keys.'),
])
def test_message(unknown, valid, text):
    assert unknown_keys_message(type('X', (), {}), unknown, valid) == text


# ------------------------------------------------ through tools/train.py
def _load_train_tool():
    spec = importlib.util.spec_from_file_location(
        'tool_train_keys', osp.join(REPO, 'tools', 'train.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train = _load_train_tool()


@pytest.mark.parametrize('option, message', [
    ('model.head.loss.prior_wieght=5',
     "PMSNLoss got unknown config key(s) ['prior_wieght'] (did you mean "
     "'prior_weight'?); valid keys: sharpen_temperature, prior_weight, "
     'use_sinkhorn, sinkhorn_iterations, entropy_weight, kl_direction, '
     'prior_usage.'),
    ('model.head.prior.tau=0.5',
     "UniformPrior got unknown config key(s) ['tau']; valid keys: "
     'num_prototypes.'),
    ('train_dataloader.batch_sampler.clases_per_batch=2',
     'ClassStratifiedBatchSampler got unknown config key(s) '
     "['clases_per_batch'] (did you mean 'classes_per_batch'?); valid keys: "
     'sampler, batch_size, classes_per_batch, replacement.'),
    ('train_dataloader.dataset.num_sample=10',
     "PowerLawOverlayDataset got unknown config key(s) ['num_sample'] (did "
     "you mean 'num_samples'?); valid keys: split, num_samples, "),
    ('default_hooks.non_finite_guard.max_skip=3',
     "NonFiniteGuardHook got unknown config key(s) ['max_skip'] (did you "
     "mean 'max_skips'?); valid keys: action, max_skips."),
])
def test_typo_through_train_py(tmp_path, option, message):
    cfg = write_config(tmp_path, TINY_PMSN)
    with pytest.raises(TypeError) as info:
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--cfg-options', option,
            f'experiment_name=keys-{option.split("=")[0]}'
        ])
    assert message in str(info.value)
