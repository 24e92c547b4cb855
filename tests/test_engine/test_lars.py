"""SyncFreeLARS: mmpretrain's LARS update, no host sync; mmpretrain's
'LARS' stays its own."""
import pytest
import torch
from mmpretrain.engine.optimizers.lars import LARS as MMPretrainLARS
from mmpretrain.registry import OPTIMIZERS
from torch import nn

import pmsn_mm  # noqa: F401
from pmsn_mm.engine.optimizers import SyncFreeLARS as LARS
from tests._profiling.op_counter import OpCounter, assert_host_syncs


def _model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8),
                          nn.Linear(8, 3))
    nn.init.zeros_(model[2].bias)  # a zero weight norm: local lr 1
    return model


def _groups(model: nn.Module) -> list:
    return [
        dict(params=[model[0].weight, model[2].weight, model[2].bias]),
        dict(params=list(model[1].parameters()), weight_decay=0.,
             lars_exclude=True),
    ]


@pytest.mark.parametrize('nesterov', [False, True])
def test_same_update_as_mmpretrain_lars(nesterov):
    ours, theirs = _model(), _model()
    kwargs = dict(lr=0.3, momentum=0.9, weight_decay=1e-4, nesterov=nesterov)
    opt_ours = LARS(_groups(ours), **kwargs)
    opt_theirs = MMPretrainLARS(_groups(theirs), **kwargs)
    x = torch.randn(16, 4)
    for _ in range(10):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
    # the same operations (torch's foreach norm is the per-tensor norm on
    # the CPU; the trust ratio in float64, as mmpretrain's Python floats):
    # equal, not only close
    for a, b in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(a, b)


def test_registered_by_its_own_name_and_makes_no_host_sync():
    assert OPTIMIZERS.get('SyncFreeLARS') is LARS
    assert OPTIMIZERS.get('LARS') is MMPretrainLARS
    model = _model()
    opt = LARS(_groups(model), lr=0.3, momentum=0.9, weight_decay=1e-4)
    model(torch.randn(16, 4)).sum().backward()
    opt.step()  # the momentum buffers are made
    with OpCounter() as counter:
        opt.step()
    assert_host_syncs(counter, what='SyncFreeLARS.step')


def test_coalesced_groups_update_as_one_group_per_parameter():
    """The trust ratio is per parameter and ``lars_exclude`` per group:
    merging equal groups (as the optimizer constructor does) changes no
    update."""
    from pmsn_mm.engine.optimizers import coalesce_param_groups

    def per_parameter(model):
        return [dict(params=[p], weight_decay=0., lars_exclude=True)
                if p.ndim == 1 else dict(params=[p])
                for p in model.parameters()]

    coalesced_model, reference_model = _model(), _model()
    kwargs = dict(lr=0.3, momentum=0.9, weight_decay=1e-4)
    groups = coalesce_param_groups(per_parameter(coalesced_model),
                                   dict(weight_decay=1e-4))
    assert [len(g['params']) for g in groups] == [2, 4]
    coalesced = LARS(groups, **kwargs)
    reference = LARS(per_parameter(reference_model), **kwargs)
    assert len(reference.param_groups) == 6
    x = torch.randn(16, 4)
    for _ in range(3):
        for model, opt in ((coalesced_model, coalesced),
                           (reference_model, reference)):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
    for a, b in zip(coalesced_model.parameters(),
                    reference_model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert not torch.equal(coalesced_model[0].weight, _model()[0].weight)
