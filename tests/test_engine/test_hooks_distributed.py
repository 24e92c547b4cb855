"""RNGStateHook and NonFiniteGuardHook with 2 gloo processes (one spawn for
both, to keep the suite fast)."""
import math
import os.path as osp
from types import SimpleNamespace

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from mmengine.hooks import CheckpointHook
from mmengine.logging import MessageHub

from pmsn_mm.engine.hooks import (NonFiniteGuardHook, NonFiniteTrainingError,
                                  RNGStateHook)
from pmsn_mm.engine.hooks.rng_state_hook import CHECKPOINT_KEY
from tests._dist import free_port, gloo_group


def _fetches():
    while True:
        yield torch.rand(4)


def _runner(rank: int, cur_iter: int) -> SimpleNamespace:
    return SimpleNamespace(
        iter=cur_iter,
        max_iters=9,
        hooks=[CheckpointHook(interval=2, by_epoch=False, save_last=False)],
        message_hub=MessageHub(f'dist-hooks-{rank}-{cur_iter}'),
        logger=SimpleNamespace(
            info=lambda msg: None, warning=lambda msg: None,
            error=lambda msg: None),
        train_loop=SimpleNamespace(dataloader_iterator=_fetches()))


def _rng_states(rank: int, out_dir: str) -> dict:
    """Save at iteration 3 on 2 ranks, resume at 4; what each rank draws."""
    path = osp.join(out_dir, 'ckpt.pth')
    torch.manual_seed(100 + rank), np.random.seed(rank)
    saver = RNGStateHook()
    runner = _runner(rank, 2)
    saver.after_train_iter(runner, 2)  # no checkpoint after iteration 3
    assert saver._states is None
    runner.iter = 3
    saver.after_train_iter(runner, 3)  # iter_4.pth: every rank gathers
    original = (torch.rand(4), np.random.rand())
    if rank == 0:  # mmengine writes checkpoints on rank 0 only
        checkpoint = dict(meta=dict(iter=4))
        saver.before_save_checkpoint(runner, checkpoint)
        torch.save(checkpoint, path)
    dist.barrier()
    checkpoint = torch.load(path)  # weights_only=True

    torch.manual_seed(7), np.random.seed(7)  # a fresh process
    resumed = _runner(rank, 4)
    hook = RNGStateHook()
    hook.after_load_checkpoint(resumed, checkpoint)
    hook.before_train(resumed)
    iterator = resumed.train_loop.dataloader_iterator
    for _ in range(4):  # mmengine's skip of the trained iterations
        next(iterator)
    replayed = (next(iterator), np.random.rand())
    return dict(original=original, replayed=replayed,
                saved=len(checkpoint[CHECKPOINT_KEY]))


def _guard(rank: int) -> str:
    """A NaN loss term on rank 1 only."""
    loss_prior = math.nan if rank == 1 else 0.5
    outputs = dict(
        loss=torch.tensor(1.0 + loss_prior),
        loss_ce=torch.tensor(1.0),
        loss_prior=torch.tensor(loss_prior),
        prior_kl=torch.tensor(math.inf))  # a statistic: not checked
    try:
        NonFiniteGuardHook().after_train_iter(
            _runner(rank, 4), 4, outputs=outputs)
    except NonFiniteTrainingError as err:
        return str(err)
    return 'continued'


def _worker(rank, port, out_dir):
    with gloo_group(rank, 2, port):
        result = dict(rng=_rng_states(rank, out_dir), guard=_guard(rank))
        torch.save(result, osp.join(out_dir, f'rank{rank}.pt'))


def test_two_ranks(tmp_path):
    mp.spawn(_worker, args=(free_port(), str(tmp_path)), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f'rank{r}.pt') for r in range(2)]

    # RNG: the checkpoint holds both ranks' states, each rank replays its own
    for res in ranks:
        rng = res['rng']
        assert rng['saved'] == 2
        assert torch.equal(rng['replayed'][0], rng['original'][0])
        assert rng['replayed'][1] == rng['original'][1]
    assert not torch.equal(ranks[0]['rng']['original'][0],
                           ranks[1]['rng']['original'][0])

    # NaN guard: a NaN on rank 1 stops both ranks (no rank left hanging)
    assert ranks[0]['guard'].startswith(
        'Training stopped by NonFiniteGuardHook: non-finite loss (loss '
        '(non-finite on another rank), loss_prior (non-finite on another '
        'rank)) at iteration 5/9.')
    assert ranks[1]['guard'].startswith(
        'Training stopped by NonFiniteGuardHook: non-finite loss (loss=nan, '
        'loss_prior=nan) at iteration 5/9.')
