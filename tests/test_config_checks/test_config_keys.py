"""Unknown config keys, read from the registered classes' signatures: the
error names the key path, the class and the valid keys, for pmsn_mm's
classes and upstream's; no class is changed to do it."""
import glob
import importlib.util
import inspect
import os.path as osp

import mmpretrain
import pytest
from mmengine.config import Config
from mmengine.registry import Registry
from mmpretrain import registry as mmpretrain_registry

from pmsn_mm.config import (UnknownConfigKeyError, check_config,
                            check_config_keys, check_config_types,
                            valid_config_keys)
from pmsn_mm.config.config_keys import (config_key_problems,
                                        unknown_keys_message)
from pmsn_mm.datasets import INat18
from pmsn_mm.engine.hooks import NonFiniteGuardHook, RNGStateHook
from tests._config_runs import RUNNABLE, config_id
from tests._configs import REPO, TINY_CLASSIFIER, TINY_PMSN, write_config


def _registered_pmsn_classes():
    for registry in vars(mmpretrain_registry).values():
        if isinstance(registry, Registry):
            for name, cls in registry.module_dict.items():
                # registered builder functions (ImageFolderPrior) are not
                # classes: Python's own error names their arguments
                if isinstance(cls, type) and cls.__module__.startswith(
                        'pmsn_mm.'):
                    yield registry.name, name, cls


def test_every_registered_class_is_checked_and_left_as_written():
    """The check covers every class pmsn_mm registers (its keys are known),
    and no class's ``__init__`` is replaced: it is the function written in
    the class's own module (or a base's), not a wrapper."""
    classes = list(_registered_pmsn_classes())
    assert len(classes) >= 35
    for registry, name, cls in classes:
        assert valid_config_keys(cls) is not None, \
            f'{registry}.{name} is not checked'
        init = cls.__init__
        assert not hasattr(init, '__wrapped__'), f'{name}.__init__ wrapped'
        owner = next(k for k in cls.__mro__ if '__init__' in vars(k))
        assert init.__qualname__ == f'{owner.__qualname__}.__init__', name
        assert inspect.getmodule(init) is inspect.getmodule(owner), name


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


# ----------------------------------------------------- on loaded configs
def _tiny(tmp_path, text=TINY_PMSN, **options):
    cfg = Config.fromfile(write_config(tmp_path, text))
    cfg.merge_from_dict(options)
    check_config_types(cfg)  # imports the scopes, as the tools do
    return cfg


@pytest.mark.parametrize('option, path, message', [
    # pmsn_mm's classes
    ('model.head.loss.prior_wieght', 'model.head.loss',
     "PMSNLoss got unknown config key(s) ['prior_wieght'] (did you mean "
     "'prior_weight'?); valid keys: sharpen_temperature, prior_weight, "),
    ('train_dataloader.batch_sampler.clases_per_batch',
     'train_dataloader.batch_sampler',
     'ClassStratifiedBatchSampler got unknown config key(s) '
     "['clases_per_batch'] (did you mean 'classes_per_batch'?)"),
    # upstream classes: mmpretrain's, mmengine's, torch's
    ('model.backbone.drop_rat', 'model.backbone',
     "MSNViT got unknown config key(s) ['drop_rat'] (did you mean "
     "'drop_rate'?)"),
    ('default_hooks.logger.intervall', 'default_hooks.logger',
     "LoggerHook got unknown config key(s) ['intervall'] (did you mean "
     "'interval'?)"),
    ('optim_wrapper.optimizer.weight_dacay', 'optim_wrapper.optimizer',
     "AdamW got unknown config key(s) ['weight_dacay'] (did you mean "
     "'weight_decay'?)"),
    ('optim_wrapper.clip_gard', 'optim_wrapper',
     "OptimWrapper got unknown config key(s) ['clip_gard'] (did you mean "
     "'clip_grad'?); valid keys: optimizer, accumulative_counts, clip_grad, "
     'constructor, paramwise_cfg.'),
    ('param_scheduler.0.by_epok', 'param_scheduler[0]',
     "got unknown config key(s) ['by_epok'] (did you mean 'by_epoch'?)"),
])
def test_unknown_key_is_named_with_its_path(tmp_path, option, path,
                                            message):
    cfg = _tiny(tmp_path, **{option: 1})
    with pytest.raises(UnknownConfigKeyError) as info:
        check_config_keys(cfg)
    assert str(info.value).startswith(f'{path}: ')
    assert message in str(info.value)
    assert isinstance(info.value, TypeError)  # as Python's own error


def test_upstream_vision_transformer_key(tmp_path):
    """A typo in an mmpretrain VisionTransformer key, in a config of
    upstream classes only."""
    cfg = Config.fromfile(write_config(tmp_path, TINY_CLASSIFIER))
    cfg.model.backbone.patch_sise = 8
    cfg.model.head.in_channel = 32
    with pytest.raises(UnknownConfigKeyError) as info:
        check_config(cfg)
    text = str(info.value)
    assert text.startswith('2 config entries with unknown keys:')
    assert ("model.backbone: VisionTransformer got unknown config key(s) "
            "['patch_sise'] (did you mean 'patch_size'?)") in text
    assert ("model.head: LinearClsHead got unknown config key(s) "
            "['in_channel'] (did you mean 'in_channels'?)") in text
    assert [p[:3] for p in info.value.problems] == [
        ('model.backbone', 'VisionTransformer', ('patch_sise', )),
        ('model.head', 'LinearClsHead', ('in_channel', ))]


def test_keys_that_builders_consume_are_accepted(tmp_path):
    cfg = _tiny(tmp_path)
    cfg.param_scheduler = [dict(type='LinearLR', start_factor=0.5,
                                by_epoch=True, convert_to_iter_based=True)]
    cfg.custom_hooks = [dict(type='EMAHook', priority='ABOVE_NORMAL')]
    cfg.optim_wrapper.constructor = 'CoalescedOptimWrapperConstructor'
    cfg.optim_wrapper.coalesce_param_groups = False
    cfg.optim_wrapper.paramwise_cfg = dict(norm_decay_mult=0.0)
    # read by build_norm_layer / initialize, not cls(**cfg)
    cfg.model.backbone.norm_cfg = dict(type='LN', eps=1e-6, requires_grad=1)
    cfg.model.backbone.init_cfg = dict(type='Kaiming', layer='Conv2d',
                                       override=dict(name='x', anything=1))
    # a helper variable nothing builds
    cfg.my_pipeline = [dict(type='PackInputs', no_such_key=1)]
    assert config_key_problems(cfg) == []


def test_a_constructor_key_is_refused_by_mmengines_constructor(tmp_path):
    """``coalesce_param_groups`` is a key of pmsn_mm's constructor only."""
    cfg = _tiny(tmp_path)
    cfg.optim_wrapper.constructor = 'DefaultOptimWrapperConstructor'
    cfg.optim_wrapper.coalesce_param_groups = False
    [(path, name, unknown, _)] = config_key_problems(cfg)
    assert (path, name, unknown) == ('optim_wrapper', 'OptimWrapper',
                                     ('coalesce_param_groups', ))


@pytest.mark.parametrize('path', RUNNABLE, ids=config_id)
def test_every_shipped_config_passes(path):
    cfg = Config.fromfile(path)
    check_config_types(cfg)
    assert config_key_problems(cfg) == []


@pytest.mark.slow
def test_no_shipped_mmpretrain_config_is_refused():
    """mmpretrain's own configs (installed with it): no valid config is
    refused. The one found is invalid in mmengine too: its train_cfg names
    both a loop type and ``by_epoch``, which mmengine's
    ``Runner.build_train_loop`` refuses (RuntimeError)."""
    root = osp.join(osp.dirname(mmpretrain.__file__), '.mim', 'configs')
    found, checked = {}, 0
    for path in sorted(glob.glob(osp.join(root, '**', '*.py'),
                                 recursive=True)):
        if '_base_' in path:
            continue
        try:
            cfg = Config.fromfile(path)
        except Exception:  # noqa: BLE001  needs mmdet, another format, ...
            continue
        checked += 1
        try:
            check_config_types(cfg)
        except Exception:  # noqa: BLE001  a type of an uninstalled package
            pass
        problems = config_key_problems(cfg)
        if problems:
            found[osp.relpath(path, root)] = [p[:3] for p in problems]
    assert checked > 400
    assert found == {
        'maskfeat/benchmarks/vit-base-p16_8xb256-coslr-100e_in1k.py':
        [('train_cfg', 'EpochBasedTrainLoop', ('by_epoch', ))]
    }


# ------------------------------------------------ through the tools
def _load_tool(name):
    spec = importlib.util.spec_from_file_location(
        f'tool_{name}_keys', osp.join(REPO, 'tools', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize('option, message', [
    ('model.head.loss.prior_wieght=5',
     "model.head.loss: PMSNLoss got unknown config key(s) ['prior_wieght'] "
     "(did you mean 'prior_weight'?); valid keys: sharpen_temperature, "
     'prior_weight, use_sinkhorn, sinkhorn_iterations, entropy_weight, '
     'kl_direction, prior_usage.'),
    ('model.head.prior.tau=0.5',
     "model.head.prior: UniformPrior got unknown config key(s) ['tau']; "
     'valid keys: num_prototypes.'),
    ('train_dataloader.dataset.num_sample=10',
     "PowerLawOverlayDataset got unknown config key(s) ['num_sample'] (did "
     "you mean 'num_samples'?); valid keys: split, num_samples, "),
    ('default_hooks.non_finite_guard.max_skip=3',
     "NonFiniteGuardHook got unknown config key(s) ['max_skip'] (did you "
     "mean 'max_skips'?); valid keys: action, max_skips, priority."),
])
def test_typo_through_train_py(tmp_path, option, message):
    train = _load_tool('train')
    cfg = write_config(tmp_path, TINY_PMSN)
    with pytest.raises(UnknownConfigKeyError) as info:
        train.main([
            cfg, '--work-dir',
            str(tmp_path / 'work'), '--cfg-options', option,
            f'experiment_name=keys-{option.split("=")[0]}'
        ])
    assert message in str(info.value)
    assert not (tmp_path / 'work').exists()  # refused before anything runs


def test_typo_through_test_py(tmp_path):
    test = _load_tool('test')
    cfg = write_config(tmp_path, TINY_CLASSIFIER)
    with pytest.raises(UnknownConfigKeyError) as info:
        test.main([cfg, str(tmp_path / 'none.pth'), '--work-dir',
                   str(tmp_path / 'work'), '--cfg-options',
                   'model.backbone.patch_sise=8'])
    assert "['patch_sise'] (did you mean 'patch_size'?)" in str(info.value)


def test_dataloader_keys_are_checked(tmp_path):
    """A dataloader dict has no type: its keys are torch's DataLoader's
    arguments and those mmengine's runner reads itself."""
    cfg = _tiny(tmp_path)
    cfg.train_dataloader.batch_sise = 4
    cfg.train_dataloader.num_batch_per_epoch = 2  # mmengine's, accepted
    [(path, name, unknown, valid)] = config_key_problems(cfg)
    assert (path, name, unknown) == ('train_dataloader', 'DataLoader',
                                     ('batch_sise', ))
    assert {'batch_size', 'num_workers', 'pin_memory', 'persistent_workers',
            'sampler', 'num_batch_per_epoch'} <= set(valid)
    with pytest.raises(UnknownConfigKeyError,
                       match="(did you mean 'batch_size'?)"):
        check_config_keys(cfg)
