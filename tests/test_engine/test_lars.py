"""pmsn_mm's LARS (registered as 'LARS'): mmpretrain's update, no host
sync."""
import pytest
import torch
from mmpretrain.engine.optimizers.lars import LARS as MMPretrainLARS
from mmpretrain.registry import OPTIMIZERS
from torch import nn

import pmsn_mm  # noqa: F401
from pmsn_mm.engine.optimizers import LARS
from pmsn_mm.utils.op_counter import OpCounter


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
    for _ in range(3):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_registered_in_place_of_mmpretrain_lars_and_makes_no_host_sync():
    assert OPTIMIZERS.get('LARS') is LARS
    model = _model()
    opt = LARS(_groups(model), lr=0.3, momentum=0.9, weight_decay=1e-4)
    model(torch.randn(16, 4)).sum().backward()
    opt.step()  # the momentum buffers are made
    with OpCounter() as counter:
        opt.step()
    assert counter.syncs == 0, counter.summary()
