"""Misspelled ``type`` names: an error with the key path and the closest
registered names, before anything is built or written."""
import pytest
from mmengine.config import Config

from pmsn_mm.config import UnknownConfigTypeError, check_config_types
from pmsn_mm.config.config_types import (format_key_path, iter_config_types,
                                         preferred_registry)
from pmsn_mm.models.priors import PowerLawPrior
from tests._config_runs import RUNNABLE
from tests._configs import TINY_CLASSIFIER, TINY_PMSN, write_config
from tests._docs import doc_python_snippet
from tests._tools import load_tool

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it


def _config(tmp_path, text: str = TINY_PMSN, **options) -> Config:
    cfg = Config.fromfile(write_config(tmp_path, text))
    cfg.merge_from_dict(options)
    return cfg


def _refused(cfg: Config) -> str:
    with pytest.raises(UnknownConfigTypeError) as info:
        check_config_types(cfg)
    return str(info.value)


# ------------------------------------------------- no false positives
def test_every_shipped_config_and_the_readme_snippet_pass(tmp_path):
    snippet = tmp_path / 'readme_snippet.py'
    snippet.write_text(doc_python_snippet(
        'docs/get_started.md',
        '## Using pmsn_mm parts from any mmpretrain config') + '\n')
    assert len(RUNNABLE) >= 87
    checked = set()
    for path in [*RUNNABLE, str(snippet)]:
        cfg = Config.fromfile(path)
        check_config_types(cfg)
        checked.update(value for _, value in iter_config_types(cfg))
    # every kind of registry the configs name was looked at
    assert {'PMSN', 'PowerLawPrior', 'ModuloHueColorJitter', 'PackInputs',
            'AdamW', 'SyncFreeLARS', 'CosineAnnealingLR', 'CheckpointHook',
            'KNNAccuracy', 'IterBasedTrainLoop', 'ClassStratifiedBatchSampler',
            'default_collate', 'TruncNormal', 'SyncBN', 'LocalVisBackend',
            'SyncFreeSimCLR'} <= checked


@pytest.mark.parametrize('options', [
    {'model.backbone.type': 'mmpretrain.VisionTransformer'},  # scoped
    {'model.head.loss.type': 'mmpretrain.CrossEntropyLoss'},
    {'model.backbone.norm_cfg': dict(type='mmengine.LN')},  # root scope
    {'model.backbone.act_cfg': dict(type='torch.nn.GELU')},  # import path
    {'model.backbone.init_cfg': dict(type='mmengine.TruncNormal')},
    {'model.data_preprocessor.batch_augments': dict(  # outside the tree
        augments=[dict(type='Mixup', alpha=0.8)])},
    {'model.backbone.type': 'ResNet'},  # known, if not a ViT
    {'optim_wrapper.optimizer.type': 'mmpretrain.LARS'},
], ids=['scoped', 'scoped_loss', 'root_scope', 'import_path', 'init_cfg',
        'batch_augments', 'resnet', 'scoped_optimizer'])
def test_registered_types_pass(tmp_path, options):
    check_config_types(_config(tmp_path, TINY_CLASSIFIER, **options))


def test_non_string_types_are_skipped(tmp_path):
    cfg = _config(tmp_path)
    cfg.model.head.prior = dict(type=PowerLawPrior, alpha=1.0)
    check_config_types(cfg)
    assert 'model.head.prior' not in [
        format_key_path(path) for path, _ in iter_config_types(cfg)]


# ------------------------------------------------------ misspellings
@pytest.mark.parametrize('text, options, message', [
    (TINY_PMSN, {'model.head.prior.type': 'PowerLawPriorr'},
     "model.head.prior.type='PowerLawPriorr' is not a registered type (did "
     "you mean 'PowerLawPrior'?); closest model names: PowerLawPrior, "
     'AdaptivePowerLawPrior. Check the spelling, or add the package that '
     'registers the type to custom_imports.'),
    (TINY_CLASSIFIER, {'model.backbone.type': 'VisionTransformerr'},
     "model.backbone.type='VisionTransformerr' is not a registered type "
     "(did you mean 'VisionTransformer'?); closest model names: "
     'VisionTransformer, '),
    (TINY_CLASSIFIER, {'model.backbone.type': 'mmpretrain.VisionTransformr'},
     "model.backbone.type='mmpretrain.VisionTransformr' is not a registered "
     "type (did you mean 'mmpretrain.VisionTransformer'?)"),
    (TINY_PMSN, {'train_dataloader.dataset.pipeline': [
        dict(type='RandomFlip', prob=0.5), dict(type='PackInput')]},
     "train_dataloader.dataset.pipeline[1].type='PackInput' is not a "
     "registered type (did you mean 'PackInputs'?); closest transform "
     'names: PackInputs'),
    (TINY_PMSN, {'custom_hooks': [dict(type='TargetEMAHook'),
                                  dict(type='PriorWeightWarmupHok')]},
     "custom_hooks[1].type='PriorWeightWarmupHok' is not a registered type "
     "(did you mean 'PriorWeightWarmupHook'?); closest hook names: "),
    (TINY_PMSN, {'param_scheduler': [
        dict(type='LinearLRR', start_factor=0.1, end=2, by_epoch=False),
        dict(type='CosineAnnealingLR', T_max=6, by_epoch=False)]},
     "param_scheduler[0].type='LinearLRR' is not a registered type (did you "
     "mean 'LinearLR'?); closest parameter scheduler names: LinearLR"),
    (TINY_PMSN, {'default_hooks.checkpoint.type': 'CheckpointHok'},
     "default_hooks.checkpoint.type='CheckpointHok' is not a registered "
     "type (did you mean 'CheckpointHook'?); closest hook names: "),
    (TINY_PMSN, {'train_dataloader.batch_sampler.type':
                 'ClassStratifiedSampler'},
     "train_dataloader.batch_sampler.type='ClassStratifiedSampler' is not a "
     "registered type (did you mean 'ClassStratifiedBatchSampler'?); "
     'closest data sampler names: '),
    (TINY_PMSN, {'optim_wrapper.optimizer.type': 'AdamWW'},
     "optim_wrapper.optimizer.type='AdamWW' is not a registered type (did "
     "you mean 'AdamW'?); closest optimizer names: AdamW"),
    (TINY_CLASSIFIER, {'model.backbone.norm_cfg': dict(type='mmcv.LN')},
     # mmcv registers into mmengine's registries; it has no scope of its own
     "model.backbone.norm_cfg.type='mmcv.LN' is not a registered type (did "
     "you mean 'LN'?)"),
    (TINY_PMSN, {'model.head.prior.type': 'Xyzzy'},
     "model.head.prior.type='Xyzzy' is not a registered type; no registered "
     'name is close to it.'),
], ids=['prior', 'backbone', 'scoped', 'pipeline', 'custom_hooks',
        'param_scheduler', 'default_hooks', 'batch_sampler', 'optimizer',
        'mmcv_scope', 'nothing_close'])
def test_misspelled_type(tmp_path, text, options, message):
    assert message in _refused(_config(tmp_path, text, **options))


def test_every_unknown_type_is_listed_at_once(tmp_path):
    cfg = _config(tmp_path, **{'model.head.prior.type': 'PowerLawPriorr',
                               'model.neck.type': 'MSNProjecter'})
    with pytest.raises(KeyError) as info:  # as the registry's own error
        check_config_types(cfg)
    text = str(info.value)
    assert text.startswith('2 unknown types in the config:\n  model.neck.')
    assert "  model.head.prior.type='PowerLawPriorr' " in text
    assert "(did you mean 'MSNProjector'?)" in text
    assert text.endswith('add the package that registers the type to '
                         'custom_imports.')
    assert [p[:2] for p in info.value.problems] == [
        ('model.neck.type', 'MSNProjecter'),
        ('model.head.prior.type', 'PowerLawPriorr')]


@pytest.mark.parametrize('path, registry', [
    (('model', 'head', 'prior'), 'MODELS'),
    (('model', 'backbone', 'init_cfg', 0), 'WEIGHT_INITIALIZERS'),
    (('model', 'backbone', 'norm_cfg'), 'MODELS'),
    (('model', 'data_preprocessor', 'batch_augments', 'augments', 0),
     'BATCH_AUGMENTS'),
    (('train_dataloader', ), None),
    (('train_dataloader', 'dataset', 'datasets', 1), 'DATASETS'),
    (('train_dataloader', 'dataset', 'pipeline', 2, 'transforms', 0),
     'TRANSFORMS'),
    (('val_dataloader', 'dataset', 'memory'), 'DATASETS'),
    (('train_dataloader', 'collate_fn'), 'FUNCTIONS'),
    (('val_cfg', ), 'LOOPS'),
    (('model', 'train_cfg'), 'MODELS'),
    (('val_evaluator', 1), 'METRICS'),
    (('optim_wrapper', 'optimizer'), 'OPTIMIZERS'),
    (('visualizer', 'vis_backends', 0), 'VISBACKENDS'),
])
def test_preferred_registry(path, registry):
    found = preferred_registry(path)
    assert (found and found[1]) == registry


# ----------------------------------------------- through the tools
def _tool(name):
    return load_tool(f'tools/{name}.py')


@pytest.mark.parametrize('tool', ['train', 'test'])
def test_tools_refuse_before_the_work_dir(tmp_path, tool):
    work = tmp_path / 'work'
    args = [write_config(tmp_path, TINY_PMSN)]
    if tool == 'test':
        args.append(str(tmp_path / 'no_checkpoint.pth'))
    with pytest.raises(UnknownConfigTypeError) as info:
        _tool(tool).main([
            *args, '--work-dir',
            str(work), '--cfg-options', 'model.head.prior.type=PowerLawPriorr'
        ])
    assert ("model.head.prior.type='PowerLawPriorr' is not a registered type"
            " (did you mean 'PowerLawPrior'?)") in str(info.value)
    assert not work.exists()
