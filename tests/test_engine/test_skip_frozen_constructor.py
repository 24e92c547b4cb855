"""SkipFrozenOptimWrapperConstructor: the default constructor's per-parameter
settings, coalesced, without one warning per frozen parameter; every config
with an EMA target uses it."""
import copy
import logging
import os.path as osp
from contextlib import contextmanager
from typing import Iterator, List

import torch.nn as nn
from mmengine.config import Config
from mmengine.logging import MMLogger
from mmengine.optim import DefaultOptimWrapperConstructor, build_optim_wrapper
from mmengine.registry import init_default_scope
from mmpretrain.registry import MODELS

from pmsn_mm.engine.optimizers import SkipFrozenOptimWrapperConstructor
from tests._config_runs import RUNNABLE, config_id
from tests._configs import CONFIGS

TOY = osp.join(CONFIGS, 'pmsn',
               'pmsn_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py')
#: Algorithms whose target encoder is a frozen EMA copy.
EMA_MODELS = ('PMSN', 'Data2VecVision')
PARAMWISE = dict(
    norm_decay_mult=0.0,
    bias_decay_mult=0.0,
    custom_keys={'proto': dict(decay_mult=0.0, lr_mult=0.5)})


class _Student(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.norm = nn.LayerNorm(8)
        self.conv = nn.Conv2d(2, 2, 3, groups=2)


class _WithTarget(nn.Module):
    """Online encoder, a fully frozen copy, and a module with one frozen
    parameter next to trainable ones."""

    def __init__(self) -> None:
        super().__init__()
        self.online = _Student()
        self.target = copy.deepcopy(self.online).requires_grad_(False)
        self.head = nn.Linear(8, 3)
        self.head.bias.requires_grad_(False)
        self.proto = nn.Parameter(nn.init.normal_(nn.Linear(3, 5).weight))


@contextmanager
def _records() -> Iterator[List[logging.LogRecord]]:
    """Every record the current mmengine logger handles meanwhile."""
    logger = MMLogger.get_current_instance()
    records: List[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def _settings(wrapper):
    """Every optimized parameter (by identity) -> the settings of its group
    (all entries but ``params`` and the kernel choice ``fused``/
    ``foreach``)."""
    return {
        id(p): {k: v for k, v in group.items()
                if k not in ('params', 'fused', 'foreach')}
        for group in wrapper.optimizer.param_groups for p in group['params']
    }


def _build(constructor, model, paramwise_cfg=PARAMWISE):
    cfg = dict(type='OptimWrapper',
               optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.05))
    return constructor(cfg, paramwise_cfg)(model)


def test_same_param_settings_as_the_default_constructor():
    model = _WithTarget()
    default = _build(DefaultOptimWrapperConstructor, model)
    expected = _settings(default)
    with _records() as records:
        wrapper = _build(SkipFrozenOptimWrapperConstructor, model)
    assert _settings(wrapper) == expected
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert set(expected) == trainable
    # mmengine: one group per parameter; here one per distinct setting, in
    # mmengine's order (a module's own parameters before its children's):
    # the prototypes' custom key (lr 5e-4), decayed, not decayed (biases,
    # norm)
    assert len(default.optimizer.param_groups) == len(trainable) == 8
    online, head = model.online, model.head
    assert [[id(p) for p in g['params']]
            for g in wrapper.optimizer.param_groups] == [
                [id(model.proto)],
                [id(online.fc.weight), id(online.conv.weight),
                 id(head.weight)],
                [id(online.fc.bias), id(online.norm.weight),
                 id(online.norm.bias), id(online.conv.bias)]]
    messages = [r.getMessage() for r in records]
    # the fully frozen target: one line, no per-parameter warning
    assert 'target: 6 frozen parameters (requires_grad=False) left out of ' \
        'the optimizer' in messages
    assert not any(m.startswith('target.') for m in messages)
    # a frozen parameter beside trainable ones: mmengine's own warning
    warnings = [m for m in messages if 'requires_grad=False' in m
                and 'left out' not in m]
    assert warnings == ['head.bias is skipped since its requires_grad=False']


def test_without_paramwise_cfg_it_is_the_default_constructor():
    model = _WithTarget()
    default = _build(DefaultOptimWrapperConstructor, model, None)
    wrapper = _build(SkipFrozenOptimWrapperConstructor, model, None)
    assert _settings(wrapper) == _settings(default)
    [group] = wrapper.optimizer.param_groups
    assert [id(p) for p in group['params']] == [
        id(p) for p in model.parameters()]


def test_toy_job_optimizer_logs_no_frozen_parameter_warning():
    cfg = Config.fromfile(TOY)
    init_default_scope('mmpretrain')
    model = MODELS.build(cfg.model)
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    assert frozen and all(n.startswith('target_net.') for n in frozen)
    with _records() as records:
        wrapper = build_optim_wrapper(model, copy.deepcopy(cfg.optim_wrapper))
    default_cfg = copy.deepcopy(cfg.optim_wrapper)
    default_cfg.pop('constructor')
    paramwise_cfg = default_cfg.pop('paramwise_cfg')
    expected = DefaultOptimWrapperConstructor(default_cfg, paramwise_cfg)(
        model)
    assert _settings(wrapper) == _settings(expected)
    assert not [r for r in records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in records
            if 'requires_grad' in r.getMessage()] == [
                f'target_net: {len(frozen)} frozen parameters '
                '(requires_grad=False) left out of the optimizer'
            ]


def test_configs_with_an_ema_target_use_it():
    checked, missing = [], []
    for path in RUNNABLE:
        if osp.basename(osp.dirname(path)) not in ('pmsn', 'data2vec',
                                                   'cpu_study',
                                                   'class_stratified'):
            continue
        cfg = Config.fromfile(path)
        if cfg.model.get('type') not in EMA_MODELS:
            continue  # no EMA target: nothing frozen to leave out
        checked.append(config_id(path))
        if cfg.optim_wrapper.get('constructor') != \
                'SkipFrozenOptimWrapperConstructor':
            missing.append(config_id(path))
    assert len(checked) >= 20, checked  # PMSN and data2vec configs
    assert missing == [], missing
