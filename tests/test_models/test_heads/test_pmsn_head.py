import math

import pytest
import torch
from mmengine.optim import DefaultOptimWrapperConstructor
from mmengine.runner.checkpoint import load_state_dict
from mmpretrain.registry import MODELS
from torch import nn

from pmsn_mm.models.heads import PMSNHead
from pmsn_mm.models.losses import PMSNLoss


def test_prototype_init_and_init_weights_keeps_it():
    torch.manual_seed(0)
    head = MODELS.build(
        dict(type='PMSNHead', num_prototypes=50, in_channels=16))
    assert isinstance(head.prototypes, nn.Parameter)
    assert head.prototypes.shape == (50, 16)
    bound = math.sqrt(1 / 16)
    assert head.prototypes.abs().max() <= bound
    assert head.prototypes.abs().max() > 0.8 * bound  # uniform, not tiny
    before = head.prototypes.detach().clone()
    head.init_weights()
    assert torch.equal(head.prototypes.detach(), before)
    torch.manual_seed(0)
    again = PMSNHead(num_prototypes=50, in_channels=16)
    assert torch.equal(again.prototypes.detach(), before)


def test_default_loss_and_config():
    head = PMSNHead(num_prototypes=4, in_channels=8)
    assert isinstance(head.loss_module, PMSNLoss)
    head = PMSNHead(
        num_prototypes=4,
        in_channels=8,
        prior=dict(type='PowerLawPrior', tau=0.5))
    assert head.prior.tau == 0.5
    built = PMSNLoss()
    assert PMSNHead(4, 8, loss=built).loss_module is built


def test_loss_uses_prototype_parameter():
    head = PMSNHead(num_prototypes=6, in_channels=8)
    anchors, targets = torch.randn(8, 8), torch.randn(4, 8)
    expected, expected_stats = head.loss_module(
        head.log_probabilities(anchors),
        head.probabilities(targets).detach(), head.prior.probs.float())
    assert head.step_statistics() is None  # before the first step
    out = head.loss(anchors, targets)
    assert set(out) == set(expected)
    for key in out:
        torch.testing.assert_close(out[key], expected[key])
    assert out['loss_ce'].grad_fn is not None
    # the step's global statistics: one method of the head, for the hook
    stats = head.step_statistics()
    torch.testing.assert_close(stats.mean_probs,
                               head.probabilities(anchors).mean(dim=0))
    assert torch.equal(stats.prototypes_used,
                       expected_stats.prototypes_used)
    assert stats.usage is None  # a fixed prior learns nothing
    head.eval()
    head.loss(anchors[:4], targets[:2])
    assert head.step_statistics() is stats  # evaluation keeps the last


def test_probabilities_and_prior_by_hand():
    head = PMSNHead(num_prototypes=3, in_channels=2, temperature=0.5,
                    label_smoothing=0.3,
                    prior=dict(type='PowerLawPrior', tau=1.0))
    with torch.no_grad():
        head.prototypes.copy_(torch.tensor([[2.0, 0.0], [0.0, 1.0],
                                            [-1.0, 0.0]]))
    z = torch.tensor([[3.0, 4.0]])  # cosines 0.6, 0.8, -0.6
    e = [math.exp(c / 0.5) for c in (0.6, 0.8, -0.6)]
    expected = [0.7 * x / sum(e) + 0.3 / 3 for x in e]
    torch.testing.assert_close(head.probabilities(z),
                               torch.tensor([expected]))
    torch.testing.assert_close(head.log_probabilities(z),
                               torch.tensor([expected]).log())
    torch.testing.assert_close(
        head.prior.probs,
        torch.tensor([6 / 11, 3 / 11, 2 / 11], dtype=torch.float64))
    # a fixed prior is state built once from the config, not checkpointed
    assert set(head.state_dict()) == {'prototypes'}


def test_learned_prior_state_round_trips_through_a_checkpoint():
    new = PMSNHead(num_prototypes=5, in_channels=4,
                   prior=dict(type='AdaptivePowerLawPrior'))
    assert new.prior.num_prototypes == 5  # K given once, by the head
    new.prior.tau.fill_(0.7)
    new.prior.num_updates.fill_(12)
    fresh = PMSNHead(num_prototypes=5, in_channels=4,
                     prior=dict(type='AdaptivePowerLawPrior'))
    # mmengine's loader (checkpoints, --resume) with a model prefix
    model = torch.nn.Module()
    model.head = fresh
    load_state_dict(model, {f'head.{k}': v
                            for k, v in new.state_dict().items()},
                    strict=True)
    assert fresh.prior.tau.item() == 0.7
    assert fresh.prior.num_updates.item() == 12
    torch.testing.assert_close(fresh.prototypes, new.prototypes)
    # probabilities recomputed from the loaded tau: k^-0.7 / sum
    w = torch.arange(1, 6, dtype=torch.float64)**-0.7
    torch.testing.assert_close(fresh.prior.probs, w / w.sum())


def test_learned_prior_is_updated_by_the_head_in_training_only():
    torch.manual_seed(0)
    head = PMSNHead(num_prototypes=5, in_channels=4,
                    prior=dict(type='AdaptivePowerLawPrior', momentum=0.0))
    anchors, targets = torch.randn(8, 4), torch.randn(4, 4)
    before = {k: v.clone() for k, v in head.prior.state_dict().items()}
    # the loss is a function of tensors: it returns the usage, changes
    # nothing
    out, step = head.loss_module(head.log_probabilities(anchors),
                                 head.probabilities(targets).detach(),
                                 head.prior.probs.float(), return_usage=True)
    assert step.usage.shape == (5, ) and 'usage' not in out
    for k, v in head.prior.state_dict().items():
        assert torch.equal(v, before[k]), k
    head.eval()
    stats = head.loss(anchors, targets)
    assert int(head.prior.num_updates) == 0 and 'usage' not in stats
    head.train()
    stats = head.loss(anchors, targets)
    assert int(head.prior.num_updates) == 1
    assert stats['prior_tau'] == head.prior.tau.float()
    # momentum 0: tau is the fit of this step's usage alone (bounded)
    from pmsn_mm.models.priors import fit_power_law_exponent
    tau_fit, _ = fit_power_law_exponent(
        step.usage.sort(descending=True).values)
    torch.testing.assert_close(head.prior.tau, tau_fit.clamp(0, 1))
    w = torch.arange(1, 6, dtype=torch.float64)**-head.prior.tau
    torch.testing.assert_close(head.prior.probs, w / w.sum())


def test_prior_with_another_k_is_refused():
    with pytest.raises(ValueError, match=r"prior num_prototypes=4 differs "
                       r"from the head's num_prototypes=5"):
        PMSNHead(num_prototypes=5, in_channels=4,
                 prior=dict(type='AdaptivePowerLawPrior', num_prototypes=4))
    from pmsn_mm.models.priors import UniformPrior
    with pytest.raises(ValueError, match='UniformPrior has num_prototypes=3 '
                       'but the head has num_prototypes=5'):
        PMSNHead(num_prototypes=5, in_channels=4, prior=UniformPrior(3))


def test_gradient_flow():
    torch.manual_seed(0)
    encoder = nn.Linear(10, 8)
    target_encoder = nn.Linear(10, 8)
    head = PMSNHead(num_prototypes=6, in_channels=8)
    images = torch.randn(4, 10)
    anchor_views = torch.randn(3 * 4, 10, requires_grad=True)
    anchors = encoder(anchor_views)
    targets = target_encoder(images)  # deliberately not under no_grad
    targets.retain_grad()
    out = head.loss(anchors, targets)
    sum(v for k, v in out.items() if 'loss' in k).backward()
    for name, param in list(
            encoder.named_parameters()) + [('prototypes', head.prototypes)]:
        assert param.grad is not None, name
        assert torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, name
    assert anchor_views.grad is not None and anchor_views.grad.abs().sum() > 0
    # Targets are used without gradient.
    assert targets.grad is None
    for param in target_encoder.parameters():
        assert param.grad is None


def test_prototypes_get_no_weight_decay():

    class Model(nn.Module):

        def __init__(self):
            super().__init__()
            self.backbone = nn.Linear(8, 8)
            self.head = PMSNHead(num_prototypes=4, in_channels=8)

    model = Model()
    constructor = DefaultOptimWrapperConstructor(
        optim_wrapper_cfg=dict(
            optimizer=dict(type='AdamW', lr=1e-3, weight_decay=0.05)),
        paramwise_cfg=dict(custom_keys={'prototypes': dict(decay_mult=0.0)}))
    optim_wrapper = constructor(model)
    decay = {}
    for group in optim_wrapper.optimizer.param_groups:
        for param in group['params']:
            decay[id(param)] = group['weight_decay']
    assert decay[id(model.head.prototypes)] == 0.0
    assert decay[id(model.backbone.weight)] == 0.05


@pytest.mark.parametrize('kwargs, match', [
    (dict(num_prototypes=0, in_channels=8), 'num_prototypes must be an int'),
    (dict(num_prototypes=4, in_channels=0), 'in_channels must be an int'),
])
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PMSNHead(**kwargs)


@pytest.mark.parametrize('value', [0.0, -0.1, float('nan'), float('inf')])
def test_invalid_temperature(value):
    with pytest.raises(ValueError, match=r'temperature must be in \(0, inf\)'):
        PMSNHead(4, 8, temperature=value)


@pytest.mark.parametrize('value', [-0.1, 1.0])
def test_invalid_label_smoothing(value):
    with pytest.raises(
            ValueError, match=r'label_smoothing must be in \[0, 1\)'):
        PMSNHead(4, 8, label_smoothing=value)


@pytest.mark.parametrize('key', ['temperature', 'label_smoothing', 'prior'])
def test_head_settings_are_not_settings_of_the_loss(key):
    with pytest.raises(TypeError,
                       match=f"unexpected keyword argument '{key}'"):
        PMSNHead(4, 8, loss=dict(type='PMSNLoss', **{key: 0.1}))
