"""PMSNLoss (through PMSNHead) with 2 real gloo processes equals 1 process
on the whole batch."""
import os

import torch
import torch.multiprocessing as mp

from pmsn_mm.models.heads import prototype_log_probabilities
from pmsn_mm.models.utils import (all_reduce_mean_with_grad,
                                  distributed_sinkhorn)
from tests._dist import free_port, gloo_group, view_major_rows
from tests._pmsn import pmsn_head

WORLD_SIZE = 2
LOCAL_BATCH = 4
NUM_VIEWS = 2
CONFIGS = [
    dict(prior=dict(type='PowerLawPrior', tau=0.5)),
    dict(
        use_sinkhorn=True,
        label_smoothing=0.1,
        kl_direction='reverse',
        entropy_weight=0.5,
        prior_weight=2.0),
]


def _global_inputs():
    gen = torch.Generator().manual_seed(0)
    dim, num_protos = 6, 8
    prototypes = torch.randn(
        num_protos, dim, generator=gen, dtype=torch.float64)
    # Rank 0's targets sit near prototypes 0-3, rank 1's near 4-7, so the
    # number of used prototypes is 4 per rank but 8 globally.
    batch = WORLD_SIZE * LOCAL_BATCH
    targets = prototypes[torch.arange(batch)] + 0.01 * torch.randn(
        batch, dim, generator=gen, dtype=torch.float64)
    anchors = torch.randn(
        NUM_VIEWS * batch, dim, generator=gen, dtype=torch.float64)
    return anchors, targets, prototypes


def _local_rows(rank):
    """Rows of the view-major global anchors that belong to ``rank``."""
    return view_major_rows(rank, WORLD_SIZE, LOCAL_BATCH, NUM_VIEWS)


def _run(anchors, targets, prototypes, cfg):
    anchors = anchors.clone().requires_grad_(True)
    head = pmsn_head(prototypes, **cfg)
    out = head.loss(anchors, targets)
    sum(v for k, v in out.items() if 'loss' in k).backward()
    out = {k: v.detach() for k, v in out.items()}
    return out, anchors.grad, head.prototypes.grad


def _worker(rank, port, out_dir):
    with gloo_group(rank, WORLD_SIZE, port):
        anchors, targets, prototypes = _global_inputs()
        anchors = anchors[_local_rows(rank)]
        targets = targets[rank * LOCAL_BATCH:(rank + 1) * LOCAL_BATCH]
        result = dict(
            runs=[_run(anchors, targets, prototypes, cfg) for cfg in CONFIGS])
        probs = prototype_log_probabilities(anchors, prototypes, 0.1).exp()
        result['mean_probs'] = all_reduce_mean_with_grad(probs.mean(dim=0))
        result['sinkhorn'] = distributed_sinkhorn(probs[:LOCAL_BATCH], 20)
        # Rank-dependent upstream gradient: L_r = (r + 1) * sum(y).
        x = torch.ones(3, dtype=torch.float64, requires_grad=True)
        ((rank + 1) * all_reduce_mean_with_grad(x).sum()).backward()
        result['reduce_grad'] = x.grad
        torch.save(result, os.path.join(out_dir, f'rank{rank}.pt'))


def test_two_processes_match_one_process_on_global_batch(tmp_path):
    mp.spawn(
        _worker,
        args=(free_port(), str(tmp_path)),
        nprocs=WORLD_SIZE,
        join=True)
    ranks = [torch.load(tmp_path / f'rank{r}.pt') for r in range(WORLD_SIZE)]
    anchors, targets, prototypes = _global_inputs()

    # p_mean is the mean over the global batch (all views, all ranks).
    probs = prototype_log_probabilities(anchors, prototypes, 0.1).exp()
    for res in ranks:
        torch.testing.assert_close(res['mean_probs'], probs.mean(dim=0))

    # Backward of the all-reduce mean = all-reduce mean of the incoming
    # gradients: mean_s(s + 1) = 1.5 on every rank (the official MSN
    # AllReduce would give 1 and 2).
    for res in ranks:
        torch.testing.assert_close(res['reduce_grad'],
                                   torch.full((3, ), 1.5, dtype=torch.float64))

    # Sinkhorn over 2 ranks == Sinkhorn on the concatenated batch.
    global_batch = WORLD_SIZE * LOCAL_BATCH
    torch.testing.assert_close(
        torch.cat([res['sinkhorn'] for res in ranks]),
        distributed_sinkhorn(probs[:global_batch], 20))

    for i, cfg in enumerate(CONFIGS):
        out, anchor_grad, proto_grad = _run(anchors, targets, prototypes, cfg)
        outs = [res['runs'][i][0] for res in ranks]
        # Per-sample means (CE, entropy) averaged over ranks == global ones;
        # the prior term and all statistics are global: equal on each rank.
        for key in ('loss_ce', 'loss_entropy'):
            if key in out:
                torch.testing.assert_close(
                    torch.stack([o[key] for o in outs]).mean(), out[key])
        for key in ('loss_prior', 'prior_kl', 'mean_probs_entropy',
                    'num_prototypes_used', 'max_target_prob'):
            for o in outs:
                torch.testing.assert_close(o[key], out[key])
        assert out['num_prototypes_used'].item() == 8  # 4 per rank

        # DDP optimises J = mean_r L_r, which is the 1-process loss L on the
        # global batch, and averages per-rank gradients. Hence:
        #   prototypes (a parameter): mean_r dL_r/dP == dL/dP;
        #   anchors of rank r:        dL_r/da_r == W * dL/da[rows of r].
        torch.testing.assert_close(
            torch.stack([res['runs'][i][2] for res in ranks]).mean(dim=0),
            proto_grad)
        for rank, res in enumerate(ranks):
            torch.testing.assert_close(
                res['runs'][i][1], WORLD_SIZE * anchor_grad[_local_rows(rank)])
