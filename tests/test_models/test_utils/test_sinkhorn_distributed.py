"""Prior-matched Sinkhorn on 2 gloo ranks equals 1 rank on the whole batch."""
import os

import pytest
import torch
import torch.multiprocessing as mp

from pmsn_mm.models.utils import distributed_sinkhorn
from tests._dist import free_port, gloo_group

pytestmark = pytest.mark.slow  # pytest -m "not slow" skips it

WORLD_SIZE = 2
LOCAL_BATCH = 5
NUM_PROTOS = 7
NUM_ITERS = (1, 3, 200)


def _global_probs():
    gen = torch.Generator().manual_seed(0)
    # Ranks see different data: rank 1's samples prefer the last prototypes,
    # so per-rank marginals would differ from the global ones.
    probs = torch.rand(
        WORLD_SIZE * LOCAL_BATCH, NUM_PROTOS, generator=gen,
        dtype=torch.float64) + 0.01
    probs[LOCAL_BATCH:, NUM_PROTOS // 2:] *= 20
    return probs


def _prior():
    w = torch.arange(1, NUM_PROTOS + 1, dtype=torch.float64)**-0.8
    return w / w.sum()


def _worker(rank, port, out_dir):
    with gloo_group(rank, WORLD_SIZE, port):
        local = _global_probs()[rank * LOCAL_BATCH:(rank + 1) * LOCAL_BATCH]
        result = {(n, marg): distributed_sinkhorn(
            local, n, _prior() if marg == 'prior' else None)
                  for n in NUM_ITERS for marg in ('prior', 'uniform')}
        torch.save(result, os.path.join(out_dir, f'rank{rank}.pt'))


def test_two_ranks_equal_one_rank_on_concatenated_batch(tmp_path):
    mp.spawn(
        _worker,
        args=(free_port(), str(tmp_path)),
        nprocs=WORLD_SIZE,
        join=True)
    ranks = [torch.load(tmp_path / f'rank{r}.pt') for r in range(WORLD_SIZE)]
    probs = _global_probs()
    for n in NUM_ITERS:
        for marg in ('prior', 'uniform'):
            whole = distributed_sinkhorn(
                probs, n, _prior() if marg == 'prior' else None)
            torch.testing.assert_close(
                torch.cat([r[(n, marg)] for r in ranks]), whole,
                rtol=0, atol=1e-12)
    # converged: the global column sums are B * prior, not per-rank ones
    codes = torch.cat([r[(200, 'prior')] for r in ranks])
    torch.testing.assert_close(
        codes.sum(dim=0), WORLD_SIZE * LOCAL_BATCH * _prior(),
        rtol=0, atol=1e-6)
    per_rank = ranks[0][(200, 'prior')].sum(dim=0)
    assert (per_rank - LOCAL_BATCH * _prior()).abs().max() > 0.1
