"""tools/cached_probe.py: which configs may be cached.

The end-to-end check (cached probes == online probes) runs the command line:
``tests/test_tools/test_linear_probe_cached.py``.
"""
import glob
import os.path as osp

import pytest
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS

from tests._linear_probe_toy import BENCHMARKS, TINY_RESNET, TINY_VIT
from tests._tools import import_beside_tools

_probe = import_beside_tools('tools/cached_probe.py')
check_deterministic, check_frozen = (_probe.check_deterministic,
                                     _probe.check_frozen)
dataset_pipeline, prepare_config = (_probe.dataset_pipeline,
                                    _probe.prepare_config)
run_cached_probe, set_pretrained = (_probe.run_cached_probe,
                                    _probe.set_pretrained)


@pytest.mark.parametrize('path', sorted(glob.glob(
    osp.join(BENCHMARKS, 'vit-small-p16-lastcls_*-linear-*.py'))),
    ids=osp.basename)
def test_vissl_configs_need_use_test_pipeline(path):
    cfg = Config.fromfile(path)
    with pytest.raises(ValueError, match='--use-test-pipeline'):
        prepare_config(cfg)
    fast = prepare_config(cfg, use_test_pipeline=True)
    train = dataset_pipeline(fast.train_dataloader.dataset)
    assert train == dataset_pipeline(cfg.val_dataloader.dataset)
    # the original config is untouched
    assert any(t['type'] == 'RandomFlip' for t in dataset_pipeline(
        cfg.train_dataloader.dataset))


def test_pipeline_inside_wrappers_and_allow_list():
    inner = [dict(type='LoadImageFromFile'), dict(type='PackInputs')]
    wrapped = dict(type='RepeatDataset', times=2,
                   dataset=dict(type='ClassBalancedDataset',
                                dataset=dict(type='X', pipeline=inner)))
    assert dataset_pipeline(wrapped) == inner
    assert dataset_pipeline(dict(type='X')) == []
    check_deterministic(inner, 'train')
    with pytest.raises(ValueError,
                       match=r"val pipeline .*\['RandomResizedCrop'\]"):
        check_deterministic(inner + [dict(type='RandomResizedCrop')], 'val')


def _tiny(backbone):
    init_default_scope('mmpretrain')
    return MODELS.build(dict(
        type='ImageClassifier', backbone=backbone,
        neck=dict(type='AdaptivePoolNeck') if backbone['type'] == 'ResNet'
        else None,
        head=dict(type='MultiLinearProbeHead', num_classes=3,
                  in_channels=32 if backbone['type'] != 'ResNet' else 64)))


def test_only_frozen_eval_mode_encoders_are_cached():
    check_frozen(_tiny(dict(type='VisionTransformer', **TINY_VIT,
                            frozen_stages=4)))
    check_frozen(_tiny(dict(type='ResNet', **TINY_RESNET, frozen_stages=4,
                            norm_eval=True)))
    with pytest.raises(ValueError, match='parameters are trainable'):
        check_frozen(_tiny(dict(type='VisionTransformer', **TINY_VIT)))
    # frozen weights, but BatchNorm would normalise with batch statistics
    resnet = _tiny(dict(type='ResNet', **TINY_RESNET))
    resnet.backbone.requires_grad_(False)
    with pytest.raises(ValueError, match='BatchNorm'):
        check_frozen(resnet)
    with pytest.raises(ValueError, match='drop_path'):
        check_frozen(_tiny(dict(type='VisionTransformer', **TINY_VIT,
                                frozen_stages=4, drop_path_rate=0.1)))


def test_set_pretrained_sets_every_pretrained_init():
    cfg = dict(backbone=dict(init_cfg=dict(type='Pretrained', checkpoint='')),
               neck=dict(init_cfg=[dict(type='Pretrained', checkpoint='')]),
               head=dict(init_cfg=dict(type='Normal')))
    assert set_pretrained(cfg, 'x.pth') == 2
    assert cfg['backbone']['init_cfg']['checkpoint'] == 'x.pth'
    assert cfg['neck']['init_cfg'][0]['checkpoint'] == 'x.pth'
    assert cfg['head']['init_cfg'] == dict(type='Normal')
    assert set_pretrained(dict(head=dict(type='Normal')), 'x.pth') == 0


def test_negative_online_iters_is_refused():
    with pytest.raises(ValueError, match='online_iters must be >= 0'):
        run_cached_probe(Config(), 'none', 'unused', online_iters=-1)
