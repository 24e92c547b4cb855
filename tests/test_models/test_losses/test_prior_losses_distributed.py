"""Prior-aware losses on 2 gloo ranks equal 1 process on the whole batch:
PMSNLoss with Sinkhorn towards a power law, PMSNLoss and PSwAVLoss with an
AdaptivePowerLawPrior (same estimate on every rank), PSwAVLoss with a power
law. The losses run through their heads (PMSNHead, PSwAVHead), which own the
prototypes and the prior."""
import os

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F

from pmsn_mm.models.heads import PSwAVHead
from tests._dist import free_port, gloo_group, view_major_rows
from tests._pmsn import pmsn_head, set_prototypes

WORLD_SIZE = 2
LOCAL_BATCH = 4
NUM_VIEWS = 2  # PMSN anchor views; PSwAV crops
DIM, NUM_PROTOS = 6, 8
# K is the head's (given to the prior as default_args)
ADAPTIVE = dict(type='AdaptivePowerLawPrior', tau_init=0.2, momentum=0.5)
PMSN_CONFIGS = [
    dict(use_sinkhorn=True, sinkhorn_iterations=5,
         prior=dict(type='PowerLawPrior', tau=0.7)),
    dict(use_sinkhorn=True, prior=ADAPTIVE),
    dict(prior=ADAPTIVE, kl_direction='reverse', prior_usage='anchors'),
]
PSWAV_CONFIGS = [
    dict(prior=dict(type='PowerLawPrior', tau=0.7)),
    dict(prior=ADAPTIVE),
]
STEPS = 2


def _global_inputs():
    gen = torch.Generator().manual_seed(0)
    batch = WORLD_SIZE * LOCAL_BATCH
    prototypes = torch.randn(
        NUM_PROTOS, DIM, generator=gen, dtype=torch.float64)
    # rank 1's targets sit near the last prototypes: per-rank usage differs
    targets = torch.randn(batch, DIM, generator=gen, dtype=torch.float64)
    targets[LOCAL_BATCH:] += 2 * prototypes[NUM_PROTOS // 2:].mean(dim=0)
    anchors = torch.randn(
        NUM_VIEWS * batch, DIM, generator=gen, dtype=torch.float64)
    return anchors, targets, prototypes


def _local_rows(rank):
    """Rows of view-/crop-major global inputs that belong to ``rank``."""
    return view_major_rows(rank, WORLD_SIZE, LOCAL_BATCH, NUM_VIEWS)


def _run_pmsn(anchors, targets, prototypes, cfg):
    head = pmsn_head(prototypes, **cfg)
    outs, grads = [], []
    for _ in range(STEPS):
        a = anchors.clone().requires_grad_(True)
        set_prototypes(head, prototypes)
        out = head.loss(a, targets)
        sum(v for k, v in out.items() if 'loss' in k).backward()
        outs.append({k: v.detach() for k, v in out.items()})
        grads.append(head.prototypes.grad)
    return outs, grads, head.prior.state_dict()


def _run_pswav(x, prototypes, cfg):
    head = PSwAVHead(
        NUM_PROTOS,
        DIM,
        loss=dict(type='PSwAVLoss', num_crops=[NUM_VIEWS]),
        **cfg).double()
    head.prototypes.data.copy_(prototypes)
    outs, grads = [], []
    for _ in range(STEPS):
        head.prototypes.grad = None
        out = head.loss(x)
        out['loss_swav'].backward()
        outs.append({k: v.detach() for k, v in out.items()})
        grads.append(head.prototypes.grad.clone())
    return outs, grads, head.prior.state_dict()


def _worker(rank, port, out_dir):
    with gloo_group(rank, WORLD_SIZE, port):
        anchors, targets, prototypes = _global_inputs()
        anchors = anchors[_local_rows(rank)]
        targets = targets[rank * LOCAL_BATCH:(rank + 1) * LOCAL_BATCH]
        result = dict(
            pmsn=[_run_pmsn(anchors, targets, prototypes, cfg)
                  for cfg in PMSN_CONFIGS],
            pswav=[_run_pswav(F.normalize(anchors), prototypes, cfg)
                   for cfg in PSWAV_CONFIGS])
        torch.save(result, os.path.join(out_dir, f'rank{rank}.pt'))


def _compare(ranks, whole, loss_keys):
    (outs, grads, prior_state) = whole
    for step in range(STEPS):
        per_rank = [r[0][step] for r in ranks]
        for key, value in outs[step].items():
            if key in loss_keys:  # local means: their mean is the global one
                torch.testing.assert_close(
                    torch.stack([o[key] for o in per_rank]).mean(), value)
            else:  # global statistics: the same on every rank
                for o in per_rank:
                    torch.testing.assert_close(o[key], value)
        # DDP averages parameter gradients over ranks
        torch.testing.assert_close(
            torch.stack([r[1][step] for r in ranks]).mean(dim=0),
            grads[step])
    # learned priors: every rank holds the 1-process estimate
    for r in ranks:
        assert set(r[2]) == set(prior_state)
        for name, value in prior_state.items():
            torch.testing.assert_close(r[2][name], value)


def test_two_ranks_equal_one_process(tmp_path):
    mp.spawn(
        _worker,
        args=(free_port(), str(tmp_path)),
        nprocs=WORLD_SIZE,
        join=True)
    ranks = [torch.load(tmp_path / f'rank{r}.pt') for r in range(WORLD_SIZE)]
    anchors, targets, prototypes = _global_inputs()
    for i, cfg in enumerate(PMSN_CONFIGS):
        whole = _run_pmsn(anchors, targets, prototypes, cfg)
        _compare([r['pmsn'][i] for r in ranks], whole,
                 ('loss_ce', 'loss_entropy'))
        if cfg['prior'] is ADAPTIVE:
            assert whole[2]['num_updates'].item() == STEPS
            assert whole[0][-1]['prior_tau'].item() != 0.2
    for i, cfg in enumerate(PSWAV_CONFIGS):
        whole = _run_pswav(F.normalize(anchors), prototypes, cfg)
        _compare([r['pswav'][i] for r in ranks], whole, ('loss_swav', ))
        if cfg['prior'] is ADAPTIVE:
            assert whole[2]['num_updates'].item() == STEPS
            assert whole[0][-1]['prior_tau'].item() != 0.2
        else:  # a fixed prior is not checkpointed
            assert not whole[2]
