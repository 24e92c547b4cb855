"""Coalesced param groups: parameters with equal settings share one group,
every parameter keeps mmengine's lr and weight decay at every step of each
method's schedule; AdamW runs fused on CUDA, foreach elsewhere; resume."""
import copy
import os
import os.path as osp
import warnings
from types import SimpleNamespace
from typing import Dict

import pytest
import torch
import torch.nn as nn
from mmengine.config import Config
from mmengine.optim import DefaultOptimWrapperConstructor, build_optim_wrapper
from mmengine.registry import (OPTIM_WRAPPER_CONSTRUCTORS, PARAM_SCHEDULERS,
                               init_default_scope)
from mmpretrain.registry import MODELS

from pmsn_mm.datasets.sample_data import make_sample_data
from pmsn_mm.engine.optimizers import (CoalescedOptimWrapperConstructor,
                                       SkipFrozenOptimWrapperConstructor,
                                       adam_implementation,
                                       coalesce_param_groups)
from tests._config_runs import RUNNABLE, config_id, shrink_model
from tests._configs import CONFIGS
from tests._recipes import plain_optim_wrapper_cfg, quiet_current_logger

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

#: Entries of a group that pick a kernel, not a value of the recipe.
KERNEL = ('fused', 'foreach')
#: Pretraining configs (the probes' configs live in benchmarks/).
PRETRAINING = [p for p in RUNNABLE if f'{os.sep}benchmarks{os.sep}' not in p]
#: One config per method family, with its whole schedule stepped:
#: (config, param groups with mmengine -> here, in the narrowed model).
SCHEDULES = [
    # warm-up, lr cosine, weight-decay cosine over 1.25x the run
    ('pmsn/pmsn_vit-small-p16_32xb128-300e_inat18-power-law.py', 161, 3),
    ('pswav/pswav_vit-mini-p4_1xb128-15e-cpu_shapes-digits-power-law.py',
     61, 3),
    # LARS without a paramwise_cfg: one group either way
    ('pswav/pswav_resnet50_8xb32-mcrop-coslr-200e_inat18-power-law.py', 1,
     1),
    # LARS, norms and biases lars_exclude
    ('vicreg/vicreg_resnet50_8xb128-amp-coslr-300e_in1k.py', 168, 2),
    ('simclr/simclr_resnet50_16xb240-coslr-300e_image-folder.py', 1, 1),
    ('class_stratified/cpu_study/simclr_resnet18-w16_1xb60-cpu-toy-class-'
     'balanced-k10_power-law-overlay.py', 66, 2),
    ('class_stratified/mae_vit-large-p16_16xb60-amp-coslr-800e_in1k-class-'
     'balanced-k960.py', 312, 2),
    ('data2vec/data2vec_beit-base-p16_16xb128-amp-coslr-800e_in1k.py', 189,
     3),
]
#: Iterations per epoch of the epoch-based schedules (any length gives the
#: same per-group arithmetic; 1 keeps a 800-epoch schedule at 800 steps).
EPOCH_LENGTH = 1


# ------------------------------------------------------------------ helpers
def _model(path: str):
    """The config and its narrowed model (as mmengine's Runner builds it)."""
    cfg = Config.fromfile(path)
    init_default_scope('mmpretrain')
    shrink_model(cfg)
    model_cfg = copy.deepcopy(cfg.model)
    if cfg.get('data_preprocessor') is not None:
        model_cfg.setdefault('data_preprocessor',
                             copy.deepcopy(cfg.data_preprocessor))
    torch.manual_seed(0)
    with quiet_current_logger():
        return cfg, MODELS.build(model_cfg)


def _wrappers(cfg: Config, model: nn.Module):
    """The config's optimizer wrapper, and the reference: mmengine's own
    ``DefaultOptimWrapperConstructor`` (one group per parameter with a
    paramwise setting), built from the same config."""
    wrapper_cfg = plain_optim_wrapper_cfg(cfg)  # AMP wrappers as plain ones
    reference_cfg = copy.deepcopy(wrapper_cfg)
    reference_cfg.pop('constructor', None)
    paramwise_cfg = reference_cfg.pop('paramwise_cfg', None)
    with quiet_current_logger():
        ours = build_optim_wrapper(model, copy.deepcopy(wrapper_cfg))
        reference = DefaultOptimWrapperConstructor(reference_cfg,
                                                   paramwise_cfg)(model)
    return ours, reference


def _group_of(optimizer) -> Dict[int, dict]:
    """Parameter identity -> its group (the dict the schedulers update)."""
    return {id(p): g for g in optimizer.param_groups for p in g['params']}


def _settings(group: dict) -> dict:
    return {k: v for k, v in group.items() if k not in ('params', ) + KERNEL}


def _schedulers(cfg: Config, wrapper) -> list:
    schedulers = cfg.param_scheduler
    if isinstance(schedulers, dict):
        schedulers = [schedulers]
    return [
        PARAM_SCHEDULERS.build(
            copy.deepcopy(s),
            default_args=dict(optimizer=wrapper, epoch_length=EPOCH_LENGTH))
        for s in schedulers
    ]


def _total_iters(cfg: Config) -> int:
    if 'max_epochs' in cfg.train_cfg:
        return cfg.train_cfg.max_epochs * EPOCH_LENGTH
    return cfg.train_cfg.max_iters


@pytest.fixture(scope='module')
def sample_cwd(tmp_path_factory):
    """A working directory with the sample iNat18 annotations and image
    folder (the class and image-folder priors count them at build time)."""
    root = tmp_path_factory.mktemp('coalesced')
    make_sample_data(str(root / 'data'), formats=('inat18', 'imagenet'))
    old = os.getcwd()
    os.chdir(str(root))
    yield str(root)
    os.chdir(old)


# ------------------------------------------------------- the shipped configs
@pytest.mark.parametrize('config,before,after', SCHEDULES,
                         ids=[c for c, _, _ in SCHEDULES])
def test_every_parameter_keeps_its_lr_and_weight_decay_at_every_step(
        config, before, after):
    cfg, model = _model(osp.join(CONFIGS, config))
    ours, reference = _wrappers(cfg, model)
    assert len(reference.optimizer.param_groups) == before
    assert len(ours.optimizer.param_groups) == after <= 4
    ours_of = _group_of(ours.optimizer)
    reference_of = _group_of(reference.optimizer)
    assert list(ours_of) and set(ours_of) == set(reference_of)
    schedulers = [_schedulers(cfg, ours), _schedulers(cfg, reference)]
    steps = _total_iters(cfg)
    seen = {'lr': set(), 'weight_decay': set()}
    with warnings.catch_warnings():  # stepped without optimizer steps
        warnings.simplefilter('ignore', UserWarning)
        for step in range(steps):
            for pid, expected in reference_of.items():
                got = ours_of[pid]
                for key in seen:
                    assert got[key] == expected[key], (
                        f'{config}: step {step}, {key} {got[key]} != '
                        f'{expected[key]}')
                    seen[key].add(expected[key])
            for built in schedulers:  # as ParamSchedulerHook, per iteration
                for scheduler in built:
                    scheduler.step()
    # the schedule moved the values (warm-up and cosine): the comparison
    # ran over a changing lr, not over constants
    assert len(seen['lr']) > steps // 2


def test_the_weight_decay_cosine_is_compared_too():
    """PMSN's weight decay moves 0.04 -> 0.4 along a cosine in the decayed
    group and stays 0 in the others, in both optimizers."""
    cfg, model = _model(osp.join(CONFIGS, SCHEDULES[0][0]))
    ours, reference = _wrappers(cfg, model)
    decays = []
    for wrapper in (ours, reference):
        built = _schedulers(cfg, wrapper)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', UserWarning)
            for _ in range(100 * EPOCH_LENGTH):
                for scheduler in built:
                    scheduler.step()
        decays.append(sorted({g['weight_decay']
                              for g in wrapper.optimizer.param_groups}))
    assert decays[0] == decays[1]
    assert decays[0][0] == 0.0 and 0.04 < decays[0][1] < 0.4
    assert len(decays[0]) == 2


def test_every_pretraining_config_has_few_distinct_groups(sample_cwd):
    checked = []
    for path in PRETRAINING:
        cfg, model = _model(path)
        ours, reference = _wrappers(cfg, model)
        groups = ours.optimizer.param_groups
        name = config_id(path)
        assert len(groups) <= 4, (name, len(groups))
        settings = [_settings(g) for g in groups]
        assert all(a != b for i, a in enumerate(settings)
                   for b in settings[i + 1:]), name
        # every parameter with the reference's settings
        expected = {k: _settings(g)
                    for k, g in _group_of(reference.optimizer).items()}
        got = {k: _settings(g) for k, g in _group_of(ours.optimizer).items()}
        assert got == expected, name
        # each group's parameters in model order
        order = {id(p): i for i, p in enumerate(model.parameters())}
        for group in groups:
            at = [order[id(p)] for p in group['params']]
            assert at == sorted(at), name
        checked.append(name)
    assert len(checked) >= 60, len(checked)


# --------------------------------------------------------------- coalescing
def _p(n: int) -> nn.Parameter:
    return nn.Parameter(torch.zeros(n))


def test_coalesce_merges_equal_settings_in_first_seen_order():
    a, b, c, d, e, f = (_p(i + 1) for i in range(6))
    groups = [
        dict(params=[a]),  # lr, weight_decay from the optimizer
        dict(params=[b], weight_decay=0.0),
        dict(params=[c], lr=0.1, weight_decay=0.05),  # == the defaults
        dict(params=[d], weight_decay=0.0, lars_exclude=True),
        dict(params=[e], weight_decay=0.0),
        dict(params=[f], weight_decay=0.0, lars_exclude=True),
    ]
    frozen = copy.deepcopy([{k: v for k, v in g.items() if k != 'params'}
                            for g in groups])
    merged = coalesce_param_groups(groups, dict(lr=0.1, weight_decay=0.05))
    assert [[id(p) for p in g['params']] for g in merged] == [
        [id(a), id(c)], [id(b), id(e)], [id(d), id(f)]]
    assert [{k: v for k, v in g.items() if k != 'params'}
            for g in merged] == [
                dict(lr=0.1, weight_decay=0.05),
                dict(lr=0.1, weight_decay=0.0),
                dict(lr=0.1, weight_decay=0.0, lars_exclude=True)]
    # the input groups are not changed
    assert [{k: v for k, v in g.items() if k != 'params'}
            for g in groups] == frozen
    assert [len(g['params']) for g in groups] == [1] * 6


def test_coalesce_keeps_groups_that_differ_in_any_entry():
    a, b = _p(1), _p(2)
    merged = coalesce_param_groups(
        [dict(params=[a], weight_decay=0.0),
         dict(params=[b], weight_decay=0.0, decay_mult=0.0)])
    assert len(merged) == 2


def test_default_constructor_name_stays_mmengines():
    """A config without a constructor gets mmengine's own (one group per
    parameter with a paramwise setting); pmsn_mm's is opted into by name."""
    init_default_scope('mmpretrain')
    args = dict(optim_wrapper_cfg=dict(optimizer=dict(type='AdamW', lr=1e-3)),
                paramwise_cfg=None)
    built = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type='DefaultOptimWrapperConstructor', **args))
    assert type(built) is DefaultOptimWrapperConstructor
    model = _toy_model()
    with quiet_current_logger():
        default = build_optim_wrapper(model, dict(
            optimizer=dict(type='AdamW', lr=1e-2, weight_decay=0.05),
            paramwise_cfg=dict(norm_decay_mult=0.0, bias_decay_mult=0.0)))
    assert len(default.optimizer.param_groups) == 6  # mmengine's: one each
    assert len(_toy_wrapper(model).optimizer.param_groups) == 2
    built = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type='CoalescedOptimWrapperConstructor', **args))
    assert type(built) is CoalescedOptimWrapperConstructor
    assert issubclass(SkipFrozenOptimWrapperConstructor,
                      CoalescedOptimWrapperConstructor)


# ------------------------------------------------------ a tied (shared) weight
class _Tied(nn.Module):
    """Two linear layers sharing one weight, each with its own bias (as
    mmengine's ``test_default_optimizer_constructor_bypass_duplicate``)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)
        self.b.weight = self.a.weight
        self.norm = nn.LayerNorm(3)

    def forward(self, x):
        return self.norm(self.b(self.a(x)))


def _tied_wrapper(constructor, model, optimizer, bypass):
    init_default_scope('mmpretrain')
    cfg = dict(type='OptimWrapper', constructor=constructor,
               optimizer=copy.deepcopy(optimizer),
               paramwise_cfg=dict(norm_decay_mult=0.0, bias_decay_mult=0.0,
                                  bypass_duplicate=bypass))
    with quiet_current_logger():
        return build_optim_wrapper(model, cfg)


OPTIMIZERS = [
    dict(type='SGD', lr=0.1, weight_decay=1e-2),
    dict(type='SGD', lr=0.1, momentum=0.9, weight_decay=1e-2),
    dict(type='AdamW', lr=0.1, weight_decay=1e-2),
]


@pytest.mark.parametrize('optimizer', OPTIMIZERS, ids=lambda o: str(o))
def test_a_tied_weight_is_refused_as_mmengine_refuses_it(optimizer):
    """Without bypass_duplicate mmengine's constructor fails (torch: a
    parameter in two groups); the coalescing one fails too, naming it,
    instead of merging the repeats into one group (two updates a step)."""
    with pytest.raises(ValueError, match='more than one parameter group'):
        _tied_wrapper('DefaultOptimWrapperConstructor', _Tied(), optimizer,
                      bypass=False)
    with pytest.raises(ValueError) as err:
        _tied_wrapper('CoalescedOptimWrapperConstructor', _Tied(), optimizer,
                      bypass=False)
    message = str(err.value)
    assert "parameter 'a.weight' (shared with 'b.weight')" in message
    assert 'bypass_duplicate=True' in message


@pytest.mark.parametrize('optimizer', OPTIMIZERS, ids=lambda o: str(o))
def test_a_tied_weight_moves_as_with_mmengines_constructor(optimizer):
    """With bypass_duplicate the tied weight is optimised once: steps of
    SGD, SGD + momentum and AdamW move every parameter as mmengine's
    constructor does (one step of plain SGD: exactly lr x grad)."""
    ours, reference = _Tied(), _Tied()
    wrappers = [
        _tied_wrapper('CoalescedOptimWrapperConstructor', ours, optimizer,
                      True),
        _tied_wrapper('DefaultOptimWrapperConstructor', reference, optimizer,
                      True)
    ]
    counts = [sum(len(g['params']) for g in w.optimizer.param_groups)
              for w in wrappers]
    assert counts == [5, 5]  # the shared weight once, in both
    x = torch.randn(8, 3, generator=torch.Generator().manual_seed(1))
    before = ours.a.weight.detach().clone()
    for step in range(3):
        grads = []
        for model, wrapper in zip((ours, reference), wrappers):
            wrapper.zero_grad()
            model(x).square().mean().backward()
            grads.append(model.a.weight.grad.clone())
            wrapper.step()
        if step == 0 and optimizer == OPTIMIZERS[0]:
            decayed = grads[0] + 1e-2 * before
            torch.testing.assert_close(before - ours.a.weight,
                                       0.1 * decayed, rtol=1e-6, atol=1e-7)
    for a, b in zip(ours.parameters(), reference.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert ours.b.weight is ours.a.weight


def test_coalesce_refuses_a_repeated_parameter():
    weight = nn.Parameter(torch.zeros(2))
    with pytest.raises(ValueError, match='a parameter of shape \\(2,\\)'):
        coalesce_param_groups([dict(params=[weight]), dict(params=[weight])])


def test_coalesce_switch_must_be_a_bool():
    with pytest.raises(TypeError, match='coalesce_param_groups must be'):
        CoalescedOptimWrapperConstructor(
            dict(optimizer=dict(type='AdamW', lr=1e-3),
                 coalesce_param_groups='no'))


# ------------------------------------------------------------ AdamW kernel
def _fake(device: str, dtype=torch.float32):
    return SimpleNamespace(device=torch.device(device),
                           is_floating_point=lambda: dtype.is_floating_point)


@pytest.mark.parametrize('cuda,devices,dtype,expected', [
    (True, ['cuda', 'cuda'], torch.float32, {'fused': True}),
    (True, ['cuda', 'cuda'], torch.bfloat16, {'fused': True}),
    (True, ['cuda', 'cpu'], torch.float32, {'foreach': True}),
    (True, ['cpu'], torch.float32, {'foreach': True}),  # not moved yet
    (True, ['cuda'], torch.int64, {'foreach': True}),
    (False, ['cpu'], torch.float32, {'foreach': True}),
])
def test_adamw_kernel_follows_the_parameters(monkeypatch, cuda, devices,
                                             dtype, expected):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: cuda)
    params = [_fake(d, dtype) for d in devices]
    for cls in (torch.optim.AdamW, torch.optim.Adam):
        assert adam_implementation(cls, dict(type='AdamW'),
                                   params) == expected


def test_adamw_kernel_keeps_explicit_settings_and_other_optimizers(
        monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    params = [_fake('cuda')]
    for explicit in (dict(fused=False), dict(foreach=False),
                     dict(fused=True)):
        assert adam_implementation(torch.optim.AdamW, explicit, params) == {}
    from pmsn_mm.engine.optimizers import SyncFreeLARS as LARS
    for cls in (torch.optim.SGD, LARS):
        assert adam_implementation(cls, {}, params) == {}


def _toy_wrapper(model: nn.Module, **optimizer):
    init_default_scope('mmpretrain')
    cfg = dict(type='OptimWrapper',
               constructor='CoalescedOptimWrapperConstructor',
               optimizer=dict(type='AdamW', lr=1e-2, weight_decay=0.05,
                              **optimizer),
               paramwise_cfg=dict(norm_decay_mult=0.0, bias_decay_mult=0.0))
    with quiet_current_logger():
        return build_optim_wrapper(model, cfg)


def _toy_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 2))


def test_constructor_passes_the_chosen_kernel(monkeypatch):
    import pmsn_mm.engine.optimizers.coalesced_constructor as m
    seen = []

    def fused(cls, cfg, params):
        seen.append((cls, [id(p) for p in params]))
        return {'fused': True}

    monkeypatch.setattr(m, 'adam_implementation', fused)
    model = _toy_model()
    wrapper = _toy_wrapper(model)
    assert seen == [(torch.optim.AdamW, [id(p) for p in model.parameters()])]
    assert all(g['fused'] is True for g in wrapper.optimizer.param_groups)


def test_foreach_adamw_on_cpu_updates_as_the_per_parameter_loop():
    ours_model, reference_model = _toy_model(), _toy_model()
    ours = _toy_wrapper(ours_model).optimizer
    assert len(ours.param_groups) == 2
    assert all(g['foreach'] is True and not g['fused']
               for g in ours.param_groups)
    # the reference: torch's single-tensor AdamW, one group per parameter
    reference = torch.optim.AdamW(
        [dict(params=[p], weight_decay=0.0 if p.ndim == 1 else 0.05)
         for p in reference_model.parameters()], lr=1e-2, foreach=False)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(16, 6, generator=gen)
    for _ in range(5):
        for model, opt in ((ours_model, ours),
                           (reference_model, reference)):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
    for a, b in zip(ours_model.parameters(), reference_model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    # weight decay reached the weights only: a norm with zero gradient
    # and no decay would not move; the first step moved every parameter
    assert not torch.equal(ours_model[0].weight, _toy_model()[0].weight)


# -------------------------------------------------------------------- resume
def _train_a_step(model: nn.Module, wrapper) -> None:
    model(torch.randn(4, 6)).square().mean().backward()
    wrapper.step()
    wrapper.zero_grad()


def test_a_coalesced_checkpoint_resumes():
    model = _toy_model()
    wrapper = _toy_wrapper(model)
    _train_a_step(model, wrapper)
    state = copy.deepcopy(wrapper.state_dict())
    again = _toy_wrapper(model)
    again.load_state_dict(copy.deepcopy(state))
    loaded = again.state_dict()
    assert [_settings(g) for g in loaded['param_groups']] == [
        _settings(g) for g in state['param_groups']]
    for key, value in state['state'].items():
        for name, tensor in value.items():
            assert torch.equal(loaded['state'][key][name], tensor)


def test_the_run_keeps_its_kernel_on_resume():
    model = _toy_model()
    saved = _toy_wrapper(model, foreach=False)  # e.g. another machine's
    _train_a_step(model, saved)
    wrapper = _toy_wrapper(model)
    wrapper.load_state_dict(copy.deepcopy(saved.state_dict()))
    assert all(g['foreach'] is True for g in wrapper.optimizer.param_groups)


def _per_parameter_state(model: nn.Module) -> dict:
    """A checkpoint's optimizer state from before coalescing (mmengine's
    constructor: one group per parameter)."""
    cfg = dict(type='OptimWrapper',
               optimizer=dict(type='AdamW', lr=1e-2, weight_decay=0.05))
    wrapper = DefaultOptimWrapperConstructor(
        cfg, dict(norm_decay_mult=0.0, bias_decay_mult=0.0))(model)
    _train_a_step(model, wrapper)
    return wrapper.state_dict()


def test_a_per_parameter_checkpoint_is_refused_with_the_way_out():
    model = _toy_model()
    state = _per_parameter_state(model)
    assert len(state['param_groups']) == 6
    wrapper = _toy_wrapper(model)
    with pytest.raises(ValueError) as err:
        wrapper.load_state_dict(state)
    message = str(err.value)
    assert 'has 6 param groups, this optimizer has 2 (coalesced from 6' \
        in message
    assert 'optim_wrapper.coalesce_param_groups=False' in message


def test_coalescing_off_resumes_a_per_parameter_checkpoint():
    model = _toy_model()
    state = _per_parameter_state(model)
    init_default_scope('mmpretrain')
    with quiet_current_logger():
        wrapper = build_optim_wrapper(model, dict(
            type='OptimWrapper', coalesce_param_groups=False,
            constructor='CoalescedOptimWrapperConstructor',
            optimizer=dict(type='AdamW', lr=1e-2, weight_decay=0.05),
            paramwise_cfg=dict(norm_decay_mult=0.0, bias_decay_mult=0.0)))
    assert len(wrapper.optimizer.param_groups) == 6
    wrapper.load_state_dict(copy.deepcopy(state))
    loaded = wrapper.state_dict()['state']
    assert set(loaded) == set(state['state'])
    for key, value in state['state'].items():
        assert torch.equal(loaded[key]['exp_avg'], value['exp_avg'])
