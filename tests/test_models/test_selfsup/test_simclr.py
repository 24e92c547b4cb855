"""SyncFreeSimCLR: mmpretrain's SimCLR loss, no host sync; mmpretrain's
'SimCLR' stays its own."""
import copy

import torch
from mmpretrain.models.selfsup.simclr import SimCLR as MMPretrainSimCLR
from mmpretrain.registry import MODELS

import pmsn_mm  # noqa: F401
from pmsn_mm.models.selfsup import SyncFreeSimCLR
from tests._profiling.op_counter import OpCounter, assert_host_syncs

CFG = dict(
    type='SyncFreeSimCLR',
    backbone=dict(type='ResNet', depth=18, base_channels=8,
                  stem_channels=8, norm_cfg=dict(type='BN')),
    neck=dict(type='NonLinearNeck', in_channels=64, hid_channels=32,
              out_channels=16, num_layers=2, with_avg_pool=True),
    head=dict(type='ContrastiveHead',
              loss=dict(type='CrossEntropyLoss'), temperature=0.1))


def _views(batch: int):
    torch.manual_seed(1)
    return [torch.randn(batch, 3, 32, 32) for _ in range(2)]


def test_same_loss_as_mmpretrain_and_no_host_sync():
    ours = MODELS.build(copy.deepcopy(CFG))
    assert type(ours) is SyncFreeSimCLR
    assert MODELS.get('SimCLR') is MMPretrainSimCLR
    theirs = MMPretrainSimCLR(**{k: v for k, v in CFG.items()
                                 if k != 'type'})
    theirs.load_state_dict(ours.state_dict())
    ours.train(), theirs.train()
    views = _views(4)
    with OpCounter() as counter:
        loss = ours.loss(views, [])['loss']
    assert_host_syncs(counter, what='SyncFreeSimCLR.loss')
    torch.testing.assert_close(loss, theirs.loss(views, [])['loss'])


def test_ops_do_not_grow_with_the_batch():
    model = MODELS.build(copy.deepcopy(CFG)).train()
    ops = []
    for batch in (2, 4):
        with OpCounter() as counter:
            model.loss(_views(batch), [])['loss'].backward()
        ops.append(counter.ops)
    assert ops[0] == ops[1]
